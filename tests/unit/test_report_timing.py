"""The time-to-ready scheduler: earliest finish under unbounded parallelism."""

from __future__ import annotations

import pytest

from slurmstack.report.timing import Duration, Step, creation_time, schedule


def _step(key: str, seconds: int, *after: str) -> Step:
    return Step(key, key, Duration(seconds, "test"), frozenset(after))


def test_parallel_branches_take_the_longer_one() -> None:
    timeline = schedule(
        [
            _step("vpc", 5),
            _step("lustre", 900, "vpc"),
            _step("nodes", 400, "vpc"),
            _step("ready", 0, "lustre", "nodes"),
        ]
    )
    assert timeline.total_seconds == 905
    assert [t.step.key for t in timeline.critical_path] == ["vpc", "lustre", "ready"]


def test_serial_chain_adds_up() -> None:
    timeline = schedule([_step("a", 10), _step("b", 20, "a"), _step("c", 30, "b")])
    assert timeline.total_seconds == 60
    assert timeline.steps["c"].start == 30


def test_target_picks_the_chain_to_a_step() -> None:
    steps = [_step("a", 10), _step("slow", 100), _step("b", 5, "a")]
    assert schedule(steps, target="b").total_seconds == 15
    assert schedule(steps).total_seconds == 100


def test_cycle_is_reported() -> None:
    with pytest.raises(ValueError, match="cycle"):
        schedule([_step("a", 1, "b"), _step("b", 1, "a")])


def test_known_slow_resources_have_a_documented_basis() -> None:
    lustre = creation_time("aws:fsx/lustreFileSystem:LustreFileSystem")
    assert lustre.seconds >= 600 and "FSx" in lustre.basis
    assert creation_time("aws:efs/mountTarget:MountTarget").seconds == 90
    assert creation_time("slurmstack:stack:HeadNode").seconds == 0
