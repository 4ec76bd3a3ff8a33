"""Time to ready waits for the pools that have nodes to boot, not for pools of no node (all
elastic, or count 0): their nodes boot when a job asks for them."""

from __future__ import annotations

import pytest

from slurmstack.report.readiness import time_to_ready, time_to_ready_range
from support.stack import example, run_ok

pytestmark = pytest.mark.stack


def test_a_pool_of_no_node_is_not_waited_for() -> None:
    """g6e-inference-spot: l40s keeps one node; l4 keeps none (0 to 4, elastic)."""
    run = run_ok(example("g6e-inference-spot"))
    ready = time_to_ready(run)
    boots = sorted(key for key in ready.steps if key.startswith(("boot:", "join:")))
    assert boots == [
        "boot:head",
        "boot:infer-dev-pool-l40s",
        "join:head",
        "join:infer-dev-pool-l40s",
    ]
    assert not any("pool-l4:" in t.step.label for t in ready.critical_path)


def test_a_cluster_of_only_elastic_pools_is_ready_when_the_head_is() -> None:
    definition = example("g6e-inference-spot")
    for pool in definition["pools"]:
        pool["max_count"] = max(pool.get("max_count", 0), pool.get("count", 1))
        pool["count"] = 0
    run = run_ok(definition)
    ready = time_to_ready_range(run).typical
    assert [t.step.key for t in ready.critical_path][-2:] == ["join:head", "ready"]
    assert not any(key.startswith("boot:infer-dev-pool") for key in ready.steps)
