"""Rules in slurmstack.checks.elastic, and the rules of other families that count a pool at
its max_count: each case triggers exactly its rule."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from slurmstack.findings import Level
from slurmstack.spec import ClusterSpec
from support.checks import Case, both, check_case, definition, findings, set_in

W = Level.WARNING
CR = "cr-0123456789abcdef0"

CASES = [
    Case(
        "max-count-below-count",
        set_in("pools.1.max_count", 1),
        "pools[1].max_count",
        "max_count 1 is below count 2",
    ),
    Case(
        "elastic-tag-count",
        both(
            set_in("tags", {f"k{i}": "v" for i in range(45)}),
            set_in("pools.1.max_count", 4),
        ),
        "tags",
        "an elastic node's instance holds 50 and slurmstack adds 6",
    ),
    # An elastic instance's tags are in its instance metadata, which refuses such keys.
    Case(
        "elastic-tag-keys",
        both(set_in("tags", {"cost center/team": "ml"}), set_in("pools.1.max_count", 4)),
        "tags.cost center/team",
        "cannot be in the instance metadata",
    ),
    Case(
        "elastic-reserved-capacity",
        set_in("pools.0.max_count", 8),
        "pools[0].max_count",
        "paid whether its nodes run or not",
        level=W,
    ),
    # EC2 Fleet, which launches elastic nodes, cannot target a reservation by id.
    Case(
        "elastic-capacity-reservation",
        both(
            set_in("pools.0.capacity", {"type": "capacity_reservation", "reservation_id": CR}),
            set_in("pools.0.max_count", 8),
        ),
        "pools[0].max_count",
        "EC2 Fleet, which cannot target a Capacity Reservation by id",
    ),
    # A Capacity Block holds every node an elastic pool may start: it bounds max_count.
    Case(
        "capacity-block-size",
        set_in("pools.0.max_count", 65),
        "pools[0].max_count",
        "max_count 65 is more than one Capacity Block holds",
        also=frozenset({"elastic-reserved-capacity"}),
        name="elastic",
    ),
    # The subnet must have an address for every node at max_count, not only at count.
    Case(
        "compute-subnet-capacity",
        both(set_in("network.vpc_cidr", "10.42.0.0/24"), set_in("pools.1.max_count", 200)),
        "network.vpc_cidr",
        "has 128 addresses but the cluster needs 221",
        name="elastic",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


def test_an_elastic_pool_of_count_zero_is_no_finding() -> None:
    """count 0 with a max_count above it is the usual elastic pool: jobs start its nodes."""
    assert (
        findings(definition(both(set_in("pools.1.count", 0), set_in("pools.1.max_count", 3)))) == []
    )


def test_max_count_and_idle_minutes_defaults_and_ranges() -> None:
    spec = ClusterSpec.model_validate(definition())
    cpu = spec.pools[1]
    assert (cpu.max_count, cpu.max_nodes, cpu.elastic_nodes) == (None, 2, 0)
    assert cpu.scale_down_idle_minutes == 10
    elastic = ClusterSpec.model_validate(definition(set_in("pools.1.max_count", 6))).pools[1]
    assert (elastic.max_nodes, elastic.elastic_nodes) == (6, 4)
    for key, value in (("max_count", -1), ("max_count", 5001), ("scale_down_idle_minutes", 0)):
        with pytest.raises(ValidationError, match=key):
            ClusterSpec.model_validate(definition(set_in(f"pools.1.{key}", value)))


def test_a_capacity_reservation_pool_at_its_count_is_no_finding() -> None:
    """Its always-on nodes are the group's, which launches into the reservation by id."""
    odcr = {"type": "capacity_reservation", "reservation_id": CR}
    assert (
        findings(definition(both(set_in("pools.0.capacity", odcr), set_in("pools.0.max_count", 4))))
        == []
    )
