"""The time-to-ready scheduler: earliest finish under unbounded parallelism."""

from __future__ import annotations

import pytest

from slurmstack.report.timing import (
    Duration,
    Step,
    creation_time,
    highest,
    lowest,
    schedule,
    schedule_range,
)


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
    assert creation_time("aws:efs/mountTarget:MountTarget").seconds == 150
    assert creation_time("slurmstack:stack:HeadNode").seconds == 0


@pytest.mark.parametrize(
    ("resource_type", "low", "high", "cited"),
    [
        ("aws:fsx/lustreFileSystem:LustreFileSystem", 600, 1200, "aws-parallelcluster issue 4211"),
        (
            "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation",
            240,
            1800,
            "terraform-provider-aws pull request 22291",
        ),
        ("aws:efs/mountTarget:MountTarget", 150, 690, "terraform-provider-aws issue 15278"),
    ],
)
def test_creation_times_that_vary_are_ranges_with_sources(
    resource_type: str, low: int, high: int, cited: str
) -> None:
    duration = creation_time(resource_type)
    assert duration.varies and duration.range == (low, high)
    assert low <= duration.seconds <= high
    assert cited in duration.basis


def test_fixed_durations_are_a_point() -> None:
    vpc = creation_time("aws:ec2/vpc:Vpc")
    assert not vpc.varies and vpc.range == (vpc.seconds, vpc.seconds)


def test_a_range_must_contain_the_typical_figure() -> None:
    with pytest.raises(ValueError, match="does not contain"):
        Duration(100, "test", low=200, high=300)


def test_schedule_range_takes_every_step_at_its_low_and_high() -> None:
    steps = [
        Step("vpc", "vpc", Duration(5, "test")),
        Step("lustre", "lustre", Duration(900, "test", low=600, high=1200), frozenset({"vpc"})),
        Step("nodes", "nodes", Duration(700, "test"), frozenset({"vpc"})),
        Step("ready", "ready", Duration(0, "test"), frozenset({"lustre", "nodes"})),
    ]
    spread = schedule_range(steps, target="ready")
    assert spread.typical.total_seconds == 905
    # At its low end Lustre (605) finishes before the nodes do, which then gate: 705.
    assert spread.low_seconds == 705 == schedule(steps, "ready", lowest).total_seconds
    assert spread.high_seconds == 1205 == schedule(steps, "ready", highest).total_seconds
