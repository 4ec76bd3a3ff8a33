"""benchmarks/bench_control_plane.py at a small size (issue 24's Proof): the real resume
program, sweep and controller pass against moto behind the throttling proxy (20% of calls
throttled, the first pool short of capacity), with a real slurmctld powering the CLOUD nodes
up for real jobs. 60 always-on pools: above the 50 group names DescribeAutoScalingGroups takes
by default, where the controller went blind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from slurm.conftest import require_binaries

pytestmark = pytest.mark.slurm

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_control_plane.py"


def test_every_node_launched_or_down_with_ec2s_reason_at_a_small_size() -> None:
    require_binaries()
    size = ["--nodes", "48", "--pools", "2", "--controller-nodes", "120"]
    done = subprocess.run(
        [sys.executable, str(BENCH), *size, "--controller-pools", "60", "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    result = json.loads(done.stdout)
    assert result["goals_missed"] == []
    assert result["asked"] == 48
    assert result["launched"] + result["down_with_reason"] == 48
    # The first pool could launch 18 of its 24: EC2's error reached Slurm, nothing was lost.
    assert result["down_with_reason"] >= 6
    assert result["lost"] == [] and result["orphans"] == []
    assert result["throttled_calls"] > 0
    assert result["mutating_ec2_calls_per_node"] <= 1.1
    assert result["sweep_terminated"] == 0
    assert result["controller_aws"] is True
    assert result["controller_pools"] == 60 and result["controller_nodes"] == 120
    assert result["controller_actions"] == 0  # every node at its group's live instance
