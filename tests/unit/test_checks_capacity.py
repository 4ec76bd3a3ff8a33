"""Rules in slurmstack.checks.capacity: each case triggers exactly its rule."""

from __future__ import annotations

import pytest

from slurmstack.findings import Level
from support.checks import CUSTOM_FACTS, Case, both, check_case, delete, set_in

W = Level.WARNING
CR = "cr-0123456789abcdef0"

CASES = [
    Case(
        "reservation-id-missing",
        delete("pools.0.capacity.reservation_id"),
        "pools[0].capacity.reservation_id",
        "capacity_block needs reservation_id",
    ),
    Case(
        "reservation-id-missing",
        set_in("pools.1.capacity", {"type": "capacity_reservation"}),
        "pools[1].capacity.reservation_id",
        "capacity_reservation needs reservation_id",
        name="odcr",
    ),
    Case(
        "reservation-id-unused",
        set_in("pools.1.capacity", {"type": "on_demand", "reservation_id": CR}),
        "pools[1].capacity.reservation_id",
        "is ignored for capacity type on_demand",
    ),
    Case(
        "spot-price-without-spot",
        set_in("pools.1.capacity", {"max_spot_price": 1.0}),
        "pools[1].capacity.max_spot_price",
        "only used with capacity type spot",
    ),
    Case(
        "spot-price-above-on-demand",
        set_in("pools.1.capacity", {"type": "spot", "max_spot_price": 9.5}),
        "pools[1].capacity.max_spot_price",
        "above the on-demand price of c7i.4xlarge in us-east-1",
        level=W,
    ),
    Case(
        "spot-unsupported",
        set_in(
            "pools.1",
            {
                "name": "cpu",
                "instance_type": "hpc7a.12xlarge",
                "count": 2,
                "capacity": {"type": "spot"},
            },
        ),
        "pools[1].capacity.type",
        "hpc7a.12xlarge is not sold as spot",
        also=frozenset({"spot-multi-node-efa", "instance-type-not-offered"}),
    ),
    Case(
        "capacity-block-unsupported",
        set_in("pools.1.capacity", {"type": "capacity_block", "reservation_id": CR}),
        "pools[1].capacity.type",
        "c7i.4xlarge is not sold as capacity-block",
    ),
    Case(
        "on-demand-unsupported",
        set_in(
            "pools.1",
            {
                "name": "cpu",
                "instance_type": "x9.4xlarge",
                "count": 2,
                "instance_facts": {**CUSTOM_FACTS, "usage_classes": ["capacity-block"]},
            },
        ),
        "pools[1].capacity.type",
        "x9.4xlarge is not sold as on-demand",
        also=frozenset({"on-demand-unpriced"}),
    ),
    Case(
        "on-demand-unpriced",
        set_in(
            "pools.1",
            {
                "name": "cpu",
                "instance_type": "x9.4xlarge",
                "count": 2,
                "instance_facts": {**CUSTOM_FACTS, "price": None},
            },
        ),
        "pools[1].capacity.type",
        "x9.4xlarge has no on-demand list price, so plan leaves pool 'cpu' out of the cost total",
        level=W,
    ),
    Case(
        "placement-group-capacity-block",
        set_in("pools.0.placement_group", True),
        "pools[0].placement_group",
        "takes no placement group",
    ),
    Case(
        "placement-group-capacity-block",
        set_in("pools.0.placement_group", "train-pg"),
        "pools[0].placement_group",
        "takes no placement group (got 'train-pg')",
        name="named",
    ),
    Case(
        "placement-group-capacity-reservation",
        both(
            set_in("pools.0.capacity", {"type": "capacity_reservation", "reservation_id": CR}),
            set_in("pools.0.placement_group", True),
        ),
        "pools[0].placement_group",
        f"Capacity Reservation ({CR}) cannot move into a group made after it",
    ),
    Case(
        "capacity-block-size",
        set_in("pools.0.count", 6),
        "pools[0].count",
        "not a Capacity Block size",
        level=W,
    ),
    Case(
        "capacity-block-size",
        set_in("pools.0.count", 65),
        "pools[0].count",
        "more than one Capacity Block holds",
        name="too-many",
    ),
    Case(
        "spot-multi-node-efa",
        set_in("pools.0.capacity", {"type": "spot"}),
        "pools[0].capacity.type",
        "one interruption ends the whole job",
        level=W,
    ),
    Case("pool-count-zero", set_in("pools.1.count", 0), "pools[1].count", "count 0", level=W),
    Case(
        "cost-override-unused",
        set_in("cost", {"instance_hourly_usd": {"p5.48xlarg": 30}}),
        "cost.instance_hourly_usd.p5.48xlarg",
        "did you mean 'p5.48xlarge'",
        level=W,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)
