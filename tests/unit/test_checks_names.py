"""Rules in slurmstack.checks.names and .region: each case triggers exactly its rule."""

from __future__ import annotations

import pytest

from support.checks import Case, both, check_case, set_in

CASES = [
    Case("cluster-name-s3-prefix", set_in("name", "xn--train"), "name", "'xn--'"),
    Case("cluster-name-s3-prefix", set_in("name", "sthree-lab"), "name", "S3", name="sthree"),
    # SSM refuses document names starting aws, amazon or amzn (its CreateDocument reference).
    Case("cluster-name-ssm-prefix", set_in("name", "aws-train"), "name", "'aws'"),
    Case("cluster-name-ssm-prefix", set_in("name", "amazonia"), "name", "'amazon'", name="amazon"),
    Case(
        "cluster-name-ssm-prefix", set_in("name", "amzn1"), "name", "Systems Manager", name="amzn"
    ),
    Case("pool-name-duplicate", set_in("pools.1.name", "train"), "pools[1].name", "pools[0]"),
    Case("pool-name-reserved", set_in("pools.1.name", "default"), "pools[1].name", "DEFAULT"),
    Case("pool-name-reserved", set_in("pools.1.name", "all"), "pools[1].name", "ALL", name="all"),
    Case(
        "pool-name-reserved", set_in("pools.1.name", "head"), "pools[1].name", "role", name="head"
    ),
    Case(
        "region-unknown",
        both(set_in("region", "us-esat-1"), set_in("availability_zone", "us-esat-1a")),
        "region",
        "did you mean 'us-east-1'",
    ),
    Case(
        "availability-zone-region",
        set_in("availability_zone", "us-west-2a"),
        "availability_zone",
        "is in region 'us-west-2'",
    ),
    Case(
        "availability-zone-region",
        set_in("availability_zone", "mars-north-1a"),
        "availability_zone",
        "does not belong to region 'us-east-1'",
        name="foreign",
    ),
    Case(
        "availability-zone-unknown",
        set_in("availability_zone", "us-east-1g"),
        "availability_zone",
        "unknown availability zone 'us-east-1g'",
    ),
    Case(
        "instance-type-not-offered",
        set_in("pools.1.instance_type", "hpc7a.96xlarge"),
        "pools[1].instance_type",
        "hpc7a.96xlarge is not offered in us-east-1; Regions that offer it: eu-north-1, "
        "eu-west-1, eu-west-3, us-east-2",
    ),
    Case(
        "instance-type-not-offered",
        set_in("head_node.instance_type", "p5e.48xlarge"),
        "head_node.instance_type",
        "p5e.48xlarge is not offered in us-east-1",
        also=frozenset({"head-node-accelerator"}),
        name="head",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


def test_names_that_only_resemble_a_reserved_prefix_pass() -> None:
    from support.checks import definition, findings

    for name in ("awesome", "am", "lab-aws", "amaz"):
        assert not findings(definition(set_in("name", name))), name
