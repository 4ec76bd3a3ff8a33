"""The alert rules, tested by Prometheus's own `promtool test rules` (Debian's prometheus
package): every rule the plan renders has a case where it fires, with the labels and summary an
operator receives, and one where it does not. In CI a missing promtool fails the test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from slurmstack.plan import build_plan
from slurmstack.plan.observability import observability_plan
from slurmstack.render.alerts import alert_rules, rule_groups
from slurmstack.validate import validate_object

pytestmark = pytest.mark.observability

DEFINITION = Path(__file__).resolve().parents[1] / "vcluster" / "definitions" / "two-pools.yaml"
BUDGET = 1000


def plan_with_everything() -> Any:
    """two-pools.yaml with accounting and a budget: every rule the plan can render."""
    definition = yaml.safe_load(DEFINITION.read_text())
    definition["slurm"]["accounting"] = {"enabled": True}
    definition["observability"] = {"budget_monthly_usd": BUDGET}
    result = validate_object(definition, source=str(DEFINITION))
    assert result.ok and result.spec is not None, [f.line() for f in result.findings]
    return observability_plan(build_plan(result.spec))


@dataclass(frozen=True)
class Case:
    series: dict[str, str]  # series -> promtool's values notation
    eval_time: str
    alerts: list[dict[str, Any]] = field(default_factory=list)  # [] : must not fire


def alert(labels: dict[str, str], summary: str) -> dict[str, Any]:
    return {"exp_labels": labels, "exp_annotations": {"summary": summary}}


DRAINED = (
    'slurmstack_node_drained{node="gpu-10-99-0-5",pool="gpu",check="gpu-xid",remedy="replace"}'
)
UTIL = "DCGM_FI_DEV_GPU_UTIL"


def gpus(node: str, job: str, utils: list[str]) -> dict[str, str]:
    return {
        f'{UTIL}{{gpu="{i}",node="{node}",pool="gpu",hpc_job="{job}"}}': util
        for i, util in enumerate(utils)
    }


# alert name -> (firing case, quiet case)
CASES: dict[str, tuple[Case, Case]] = {
    "NodeDrainedByHealthCheck": (
        Case(
            {DRAINED: "1x10"},
            "2m",
            [
                alert(
                    {
                        "node": "gpu-10-99-0-5",
                        "pool": "gpu",
                        "check": "gpu-xid",
                        "remedy": "replace",
                    },
                    "gpu-10-99-0-5 (gpu) drained by the gpu-xid check; the controller's "
                    "remedy: replace",
                )
            ],
        ),
        # Drained by a person (scontrol update ... reason=maintenance): not ours to alert on.
        Case({DRAINED.replace("gpu-xid", "operator"): "1x10"}, "2m"),
    ),
    "GpuMissing": (
        Case(
            {**gpus("gpu-1", "", ["0x10"] * 3), 'slurmstack_node_gpus{node="gpu-1"}': "4x10"},
            "2m",
            [
                alert(
                    {"node": "gpu-1", "pool": "gpu"},
                    "gpu-1 reports 3 GPUs, fewer than Slurm declares",
                )
            ],
        ),
        Case(
            {**gpus("gpu-1", "", ["0x10"] * 4), 'slurmstack_node_gpus{node="gpu-1"}': "4x10"}, "2m"
        ),
    ),
    "CircuitBreakerOpen": (
        Case(
            {'slurmstack_breaker_open{pool="gpu"}': "1x10"},
            "1m",
            [
                alert(
                    {"pool": "gpu"},
                    "pool gpu: repairs stopped (too many replacements); "
                    "`slurmstack-node breaker reset gpu` once the cause is fixed",
                )
            ],
        ),
        Case({'slurmstack_breaker_open{pool="gpu"}': "0x10"}, "1m"),
    ),
    "GpusAllocatedIdle": (
        Case(
            gpus("gpu-1", "7", ["2x40", "0x40"]),
            "35m",
            [
                alert(
                    {"hpc_job": "7"},
                    "job 7 holds GPUs that have been idle for 30 minutes (below 5%)",
                )
            ],
        ),
        # Busy, or idle for less than the threshold, or idle but held by no job.
        Case(
            {
                **gpus("gpu-1", "7", ["80x40"]),
                **gpus("gpu-2", "8", ["90x20", "0x20"]),
                **gpus("gpu-3", "", ["0x40"]),
            },
            "35m",
        ),
    ),
    "JobStraggler": (
        Case(
            {
                **gpus("gpu-1", "9", ["90x20"]),
                **gpus("gpu-2", "9", ["88x20"]),
                **gpus("gpu-3", "9", ["40x20"]),
            },
            "15m",
            [
                alert(
                    {"hpc_job": "9", "node": "gpu-3"},
                    "gpu-3 runs job 9 at 40% GPU, more than 30% below the job's median node",
                )
            ],
        ),
        # One node's job at low use (that is GpusAllocatedIdle's), and an even job.
        Case(
            {
                **gpus("gpu-1", "9", ["40x20"]),
                **gpus("gpu-2", "10", ["80x20"]),
                **gpus("gpu-3", "10", ["70x20"]),
            },
            "15m",
        ),
    ),
    "SlurmctldDown": (
        Case(
            {'slurmstack_daemon_up{daemon="slurmctld"}': "0x10"},
            "5m",
            [
                alert(
                    {"daemon": "slurmctld"},
                    "slurmctld does not answer on the head node: no job starts",
                )
            ],
        ),
        Case({'slurmstack_daemon_up{daemon="slurmctld"}': "1 0 1 0 1 1 1"}, "5m"),
    ),
    "SlurmdbdDown": (
        Case(
            {'slurmstack_daemon_up{daemon="slurmdbd"}': "0x10"},
            "6m",
            [
                alert(
                    {"daemon": "slurmdbd"}, "slurmdbd does not answer: accounting and limits stall"
                )
            ],
        ),
        Case({'slurmstack_daemon_up{daemon="slurmdbd"}': "1x10"}, "6m"),
    ),
    "FilesystemNearlyFull": (
        Case(
            {
                'node_filesystem_avail_bytes{fstype="lustre",mountpoint="/fsx",node="gpu-1"}': "5x10",
                'node_filesystem_size_bytes{fstype="lustre",mountpoint="/fsx",node="gpu-1"}': "100x10",
            },
            "6m",
            [
                alert(
                    {"fstype": "lustre", "mountpoint": "/fsx", "node": "gpu-1"},
                    "/fsx on gpu-1 is 95% full",
                )
            ],
        ),
        # Half full; and a full tmpfs, which is not a file system anyone stores on.
        Case(
            {
                'node_filesystem_avail_bytes{fstype="lustre",mountpoint="/fsx",node="gpu-1"}': "50x10",
                'node_filesystem_size_bytes{fstype="lustre",mountpoint="/fsx",node="gpu-1"}': "100x10",
                'node_filesystem_avail_bytes{fstype="tmpfs",mountpoint="/run",node="gpu-1"}': "0x10",
                'node_filesystem_size_bytes{fstype="tmpfs",mountpoint="/run",node="gpu-1"}': "100x10",
            },
            "6m",
        ),
    ),
    "FilesystemUnavailable": (
        Case(
            {
                'slurmstack_filesystem_mounted{mount="/fsx",kind="lustre",node="gpu-1"}': "1x10",
                'slurmstack_filesystem_writable{mount="/fsx",kind="lustre",node="gpu-1"}': "0x10",
            },
            "3m",
            [
                alert(
                    {"mount": "/fsx", "kind": "lustre", "node": "gpu-1"},
                    "/fsx (lustre) is not mounted or not writable on gpu-1",
                )
            ],
        ),
        Case(
            {
                'slurmstack_filesystem_mounted{mount="/fsx",kind="lustre",node="gpu-1"}': "1x10",
                'slurmstack_filesystem_writable{mount="/fsx",kind="lustre",node="gpu-1"}': "1x10",
            },
            "3m",
        ),
    ),
    "PoolLaunchBackoff": (
        Case(
            {
                'slurmstack_launch_failures{pool="gpu"}': "3x10",
                'slurmstack_launch_backoff{pool="gpu"}': "1x10",
            },
            "1m",
            [
                alert(
                    {"pool": "gpu"},
                    "pool gpu waits to launch again after 3 failed launches "
                    "(see the nodes' reasons: slurmstack:launch)",
                )
            ],
        ),
        # Failed once, but its retry is due: it no longer waits.
        Case(
            {
                'slurmstack_launch_failures{pool="gpu"}': "1x10",
                'slurmstack_launch_backoff{pool="gpu"}': "0x10",
            },
            "1m",
        ),
    ),
    "CapacityBlockEnding": (
        Case(
            {
                'slurmstack_capacity_block_end_timestamp_seconds{pool="train",reservation="cr-1"}': "36000x10"
            },
            "1m",
            [
                alert(
                    {"pool": "train", "reservation": "cr-1"},
                    "Capacity Block cr-1 of pool train ends in 9h 59m 0s",
                )
            ],
        ),
        Case(
            {
                'slurmstack_capacity_block_end_timestamp_seconds{pool="train",reservation="cr-1"}': "200000x10"
            },
            "1m",
        ),
    ),
    "SpotInterruptionNotice": (
        Case(
            {'slurmstack_spot_interruption_notice{node="cpu-1"}': "0 1 1"},
            "1m",
            [alert({"node": "cpu-1"}, "EC2 reclaims cpu-1 (spot) within two minutes")],
        ),
        Case({'slurmstack_spot_interruption_notice{node="cpu-1"}': "0 0 0"}, "1m"),
    ),
    "HealthChecksStopped": (
        Case(
            {'slurmstack_health_last_run_timestamp_seconds{node="gpu-1"}': "0x30"},
            "20m",
            [alert({"node": "gpu-1"}, "gpu-1 has not run its health checks for 10 minutes")],
        ),
        # A run every minute.
        Case({'slurmstack_health_last_run_timestamp_seconds{node="gpu-1"}': "0+60x30"}, "20m"),
    ),
    "SpendBeyondBudget": (
        Case(
            {
                'slurmstack_node_price_usd_per_hour{node="gpu-1",pool="gpu"}': "1.5x100",
                'slurmstack_node_price_usd_per_hour{node="head",pool="head"}': "0.5x100",
            },
            "90m",
            [alert({}, f"the cluster runs at $1460 a month, beyond its budget of ${BUDGET}")],
        ),
        Case({'slurmstack_node_price_usd_per_hour{node="gpu-1",pool="gpu"}': "1x100"}, "90m"),
    ),
}


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        message = "promtool is missing (apt-get install prometheus)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {message}")
        pytest.skip(message)
    return found


def test_every_rule_has_a_firing_and_a_quiet_case() -> None:
    names = {rule.name for rule in alert_rules(plan_with_everything())}
    assert names == set(CASES), names ^ set(CASES)


def test_the_rules_fire_when_they_should_and_only_then(tmp_path: Path) -> None:
    """One promtool run over every case; its report names each case that failed."""
    binary = promtool()
    observe = plan_with_everything()
    rules = alert_rules(observe)
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rule_groups(observe), sort_keys=False))
    tests = []
    for rule in rules:
        for case in CASES[rule.name]:
            expected = [
                {
                    "exp_labels": {**a["exp_labels"], "severity": rule.severity, "kind": rule.name},
                    "exp_annotations": a["exp_annotations"],
                }
                for a in case.alerts
            ]
            tests.append(
                {
                    "name": f"{rule.name} {'fires' if case.alerts else 'stays quiet'}",
                    "interval": "1m",
                    "input_series": [{"series": s, "values": v} for s, v in case.series.items()],
                    "alert_rule_test": [
                        {
                            "eval_time": case.eval_time,
                            "alertname": rule.name,
                            "exp_alerts": expected,
                        }
                    ],
                }
            )
    document = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(document, sort_keys=False))
    result = subprocess.run(
        [binary, "test", "rules", "tests.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


def test_promtool_checks_the_rendered_rule_file(tmp_path: Path) -> None:
    """The rule file as every example renders it is one Prometheus loads."""
    binary = promtool()
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rule_groups(plan_with_everything()), sort_keys=False))
    result = subprocess.run([binary, "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
