"""Rules in slurmstack.checks.network: each case triggers exactly its rule."""

from __future__ import annotations

import pytest

from slurmstack.checks.network import compute_subnet, lustre_addresses
from slurmstack.findings import Level
from slurmstack.spec import ClusterSpec
from support.checks import Case, both, check_case, definition, findings, set_in

W = Level.WARNING
VPC = "vpc-0123456789abcdef0"
SUBNET = "subnet-0123456789abcdef0"
PREFIX = "network.compute_subnet_prefix"
EXISTING = {"vpc_id": VPC, "compute_subnet_id": SUBNET, "compute_subnet_cidr": "10.0.0.0/20"}

CASES = [
    Case(
        "network-missing",
        set_in("network.vpc_cidr", None),
        "network.vpc_cidr",
        "vpc_cidr is null and no vpc_id",
    ),
    Case(
        "vpc-cidr-size",
        set_in("network.vpc_cidr", "10.42.0.0/25"),
        "network.vpc_cidr",
        "a new VPC must be a /16 to /24",
    ),
    Case(
        "vpc-cidr-size",
        set_in("network.vpc_cidr", "10.0.0.0/8"),
        "network.vpc_cidr",
        "is a /8",
        name="too-big",
    ),
    Case(
        "vpc-cidr-private",
        set_in("network.vpc_cidr", "44.10.0.0/16"),
        "network.vpc_cidr",
        "not a private range",
        level=W,
    ),
    Case(
        "vpc-cidr-docker",
        set_in("network.vpc_cidr", "172.17.0.0/16"),
        "network.vpc_cidr",
        "Docker's default bridge",
        level=W,
    ),
    Case(
        "existing-vpc-subnet",
        set_in("network", {"vpc_id": VPC}),
        "network.compute_subnet_id",
        "without compute_subnet_id",
    ),
    Case(
        "existing-vpc-subnet",
        set_in("network.compute_subnet_id", SUBNET),
        "network.vpc_id",
        "without vpc_id",
        name="subnet-only",
    ),
    Case(
        "vpc-options-mixed",
        set_in("network", {**EXISTING, "vpc_cidr": "10.42.0.0/16"}),
        "network.vpc_cidr",
        "ignored with an existing vpc_id",
    ),
    Case(
        "vpc-options-mixed",
        set_in("network", {**EXISTING, "compute_subnet_prefix": 20}),
        "network.compute_subnet_prefix",
        "only applies to a new VPC",
        name="prefix",
    ),
    Case(
        "vpc-options-mixed",
        set_in("network.compute_subnet_cidr", "10.42.0.0/20"),
        "network.compute_subnet_cidr",
        "describes an existing subnet",
        name="cidr",
    ),
    Case(
        "vpc-options-mixed",
        set_in("network.public_subnet_id", SUBNET),
        "network.public_subnet_id",
        "needs vpc_id",
        name="public",
    ),
    Case(
        "compute-subnet-prefix",
        both(set_in("network.vpc_cidr", "10.42.0.0/20"), set_in(PREFIX, 16)),
        "network.compute_subnet_prefix",
        "does not fit in the /20 VPC",
    ),
    Case(
        "compute-subnet-prefix",
        both(set_in("network.vpc_cidr", "10.42.0.0/20"), set_in(PREFIX, 20)),
        "network.compute_subnet_prefix",
        "overlaps the public subnet",
        name="overlap",
    ),
    Case(
        "compute-subnet-capacity",
        both(set_in("network.vpc_cidr", "10.42.0.0/24"), set_in("pools.1.count", 200)),
        "network.vpc_cidr",
        "has 128 addresses but the cluster needs 221",
    ),
    Case(
        "compute-subnet-capacity",
        set_in("network", {**EXISTING, "compute_subnet_cidr": "10.0.0.0/28"}),
        "network.compute_subnet_cidr",
        "5 reserved by AWS",
        name="existing",
    ),
    Case(
        "compute-subnet-headroom",
        both(set_in("network.vpc_cidr", "10.42.0.0/24"), set_in("pools.1.count", 100)),
        "network.vpc_cidr",
        "replacing failed nodes needs about 11 more",
        level=W,
    ),
    Case(
        "compute-subnet-cidr-unknown",
        set_in("network", {"vpc_id": VPC, "compute_subnet_id": SUBNET}),
        "network.compute_subnet_cidr",
        "give the CIDR of",
        level=W,
    ),
    Case(
        "ssh-open-world",
        set_in("network.ssh_cidrs", ["203.0.113.0/24", "0.0.0.0/0"]),
        "network.ssh_cidrs[1]",
        "whole internet",
        level=W,
    ),
    Case(
        "ssh-without-public-subnet",
        set_in("network", {**EXISTING, "ssh_cidrs": ["203.0.113.0/24"]}),
        "network.public_subnet_id",
        "no public_subnet_id",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


def test_subnet_budget_counts_every_consumer() -> None:
    """221 = 5 reserved + head 1 + EFS 1 + Lustre 2 + 19200/2400 + nodes (4 p5 + 200 c7i),
    each p5 taking one address: its 31 extra EFA cards are efa-only interfaces."""
    spec = ClusterSpec.model_validate(definition(set_in("pools.1.count", 200)))
    assert lustre_addresses(spec.storage.lustre) == 10
    assert str(compute_subnet(spec)) == "10.42.0.0/17"
    found = findings(
        definition(both(set_in("network.vpc_cidr", "10.42.0.0/24"), set_in("pools.1.count", 200)))
    )
    (capacity,) = [f for f in found if f.rule == "compute-subnet-capacity"]
    assert "train: 4 x 1" in capacity.message and "cpu: 200 x 1" in capacity.message


def test_subnet_fits_exactly_without_finding() -> None:
    # 128 addresses: 17 fixed + 4 p5 + 90 c7i = 111 used; headroom 1 (p5) + 9 (c7i) = 121.
    found = findings(
        definition(both(set_in("network.vpc_cidr", "10.42.0.0/24"), set_in("pools.1.count", 90)))
    )
    assert not [f for f in found if f.rule.startswith("compute-subnet")]
