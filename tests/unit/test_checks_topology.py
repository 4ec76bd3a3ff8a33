"""Rules in slurmstack.checks.topology: each case triggers exactly its rule."""

from __future__ import annotations

import pytest

from slurmstack.spec import ClusterSpec
from support.checks import Case, check_case, definition, findings, set_in

CASES = [
    Case(
        "pool-topology-unavailable",
        set_in("pools.0.topology", "block"),
        "pools[0].topology",
        "block topology needs UltraServer capacity blocks, and p5.48xlarge has none",
        name="block-on-p5",
    ),
    Case(
        "pool-topology-unavailable",
        set_in("pools.1.topology", "tree"),
        "pools[1].topology",
        "EC2 reports no instance topology for c7i.4xlarge",
        name="tree-on-c7i",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize(
    ("pool", "choice"), [(0, "tree"), (0, "auto"), (0, "off"), (1, "auto"), (1, "off")]
)
def test_what_ec2_can_give_is_no_finding(pool: int, choice: str) -> None:
    data = definition(set_in(f"pools.{pool}.topology", choice))
    assert findings(data) == []
    assert ClusterSpec.model_validate(data).pools[pool].topology.value == choice


def test_auto_by_default() -> None:
    assert ClusterSpec.model_validate(definition()).pools[0].topology.value == "auto"
