"""Network: the VPC and subnets the cluster lives in, and who may reach the head node."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error, pools_with_facts, warning
from slurmstack.findings import Finding
from slurmstack.rules.efa import addresses_per_node, efa_interfaces
from slurmstack.rules.subnets import carve
from slurmstack.spec import ClusterSpec, LustreSpec

# A new VPC: AWS allows /16 to /28; slurmstack carves a compute and a public subnet out of
# it, so /24 is the smallest that leaves the compute subnet room for a useful cluster.
VPC_PREFIX_RANGE = (16, 24)

# Amazon VPC User Guide, "Subnet CIDR blocks": the first four and the last address of every
# subnet are reserved by AWS.
AWS_RESERVED_PER_SUBNET = 5
HEAD_NODE_ADDRESSES = 1  # the head node has one ENA interface in the compute subnet
EFS_MOUNT_TARGET_ADDRESSES = 1  # one EFS mount target in the cluster's AZ, in the compute subnet

# FSx for Lustre puts several ENIs in its subnet (FileSystem.NetworkInterfaceIds: "for an FSx
# for Lustre file system, you can have more than one"); AWS does not publish the count. We
# budget one per 2.4 TiB storage unit plus two for the metadata/management servers, an upper
# estimate on purpose: running out of addresses is found only when the file system is created.
LUSTRE_ADDRESSES_PER_GIB = 1 / 2400
LUSTRE_FIXED_ADDRESSES = 2

# An Auto Scaling group replacing unhealthy nodes, or rebalancing, may launch the new instance
# before the old one has released its addresses: keep 10% of each pool (at least one node).
REPLACEMENT_HEADROOM_FRACTION = 0.10

PRIVATE_RANGES = tuple(
    ipaddress.IPv4Network(cidr) for cidr in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
)
# Docker's default bridge network; the Deep Learning AMI ships Docker, and the Amazon VPC User
# Guide advises against 172.17.0.0/16 because some AWS services use it.
DOCKER_BRIDGE = ipaddress.IPv4Network("172.17.0.0/16")


def lustre_addresses(lustre: LustreSpec | None) -> int:
    if lustre is None:
        return 0
    return LUSTRE_FIXED_ADDRESSES + math.ceil(lustre.capacity_gib * LUSTRE_ADDRESSES_PER_GIB)


def _new_vpc(spec: ClusterSpec) -> ipaddress.IPv4Network | None:
    net = spec.network
    return net.vpc_cidr if net.vpc_id is None else None


def compute_subnet(spec: ClusterSpec) -> ipaddress.IPv4Network | None:
    """The compute subnet's CIDR as the plan derives it; None when unknown or not derivable."""
    vpc = _new_vpc(spec)
    if vpc is not None and not VPC_PREFIX_RANGE[0] <= vpc.prefixlen <= VPC_PREFIX_RANGE[1]:
        return None  # refused by vpc_cidr_size; the plan cannot carve such a VPC
    try:
        return carve(spec)[2]
    except ValueError:
        return None


def _per_node_addresses(spec: ClusterSpec, catalog: Catalog) -> list[tuple[int, int, int]]:
    """(pool index, addresses per node, nodes) for every pool, at its largest (max_count: an
    elastic node takes its addresses while it runs); unknown types count one."""
    known = {pf.index: pf for pf in pools_with_facts(spec, catalog)}
    out = []
    for index, pool in enumerate(spec.pools):
        pf = known.get(index)
        per_node = 1
        if pf is not None:
            per_node = addresses_per_node(efa_interfaces(pf.facts, pf.efa))
        out.append((index, per_node, pool.max_nodes))
    return out


def _fixed_addresses(spec: ClusterSpec) -> dict[str, int]:
    fixed = {
        "reserved by AWS": AWS_RESERVED_PER_SUBNET,
        "head node": HEAD_NODE_ADDRESSES,
    }
    if spec.storage.home is not None and spec.storage.home.file_system_id is None:
        fixed["EFS mount target"] = EFS_MOUNT_TARGET_ADDRESSES
    if spec.storage.lustre is not None:
        fixed["Lustre (estimate)"] = lustre_addresses(spec.storage.lustre)
    return fixed


def _subnet_path(spec: ClusterSpec) -> str:
    if spec.network.vpc_id is not None:
        return "network.compute_subnet_cidr"
    if spec.network.compute_subnet_prefix is not None:
        return "network.compute_subnet_prefix"
    return "network.vpc_cidr"


# why: without a new VPC CIDR or an existing VPC there is nowhere to put the cluster.
@rule
def network_missing(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    if spec.network.vpc_id is None and spec.network.vpc_cidr is None:
        yield error(
            "network.vpc_cidr",
            "vpc_cidr is null and no vpc_id is given; set vpc_cidr (e.g. 10.42.0.0/16) for a "
            "new VPC, or vpc_id and compute_subnet_id to use an existing one",
        )


# why: see VPC_PREFIX_RANGE; the plan cannot carve two subnets out of a smaller VPC.
@rule
def vpc_cidr_size(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    vpc = _new_vpc(spec)
    low, high = VPC_PREFIX_RANGE
    if vpc is not None and not low <= vpc.prefixlen <= high:
        yield error(
            "network.vpc_cidr",
            f"vpc_cidr {vpc} is a /{vpc.prefixlen}; a new VPC must be a /{low} to /{high} "
            f"(AWS allows /16 to /28, and slurmstack splits it into two subnets)",
        )


# why: a VPC outside RFC 1918 shadows real internet addresses for everything in it.
@rule
def vpc_cidr_private(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    vpc = _new_vpc(spec)
    if vpc is not None and not any(vpc.subnet_of(r) for r in PRIVATE_RANGES):
        yield warning(
            "network.vpc_cidr",
            f"vpc_cidr {vpc} is not a private range (10.0.0.0/8, 172.16.0.0/12, "
            "192.168.0.0/16); nodes could not reach internet hosts with those addresses",
        )


# why: on nodes running Docker, VPC addresses inside docker0's range are unreachable.
@rule
def vpc_cidr_docker(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    vpc = _new_vpc(spec)
    candidates = [("network.vpc_cidr", vpc)]
    if spec.network.vpc_id is not None:
        candidates.append(("network.compute_subnet_cidr", spec.network.compute_subnet_cidr))
    for path, cidr in candidates:
        if cidr is not None and cidr.overlaps(DOCKER_BRIDGE):
            yield warning(
                path,
                f"{cidr} overlaps 172.17.0.0/16, Docker's default bridge (the Deep Learning "
                "AMI runs Docker); nodes cannot reach those addresses; pick another range",
            )
            return


# why: an existing VPC needs the subnet to put nodes in, and a subnet needs its VPC.
@rule
def existing_vpc_subnet(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    net = spec.network
    if net.vpc_id is not None and net.compute_subnet_id is None:
        yield error(
            "network.compute_subnet_id",
            f"vpc_id {net.vpc_id} is given without compute_subnet_id; name the private subnet "
            f"(in {spec.availability_zone}) for the head node, workers and storage",
        )
    if net.vpc_id is None and net.compute_subnet_id is not None:
        yield error(
            "network.vpc_id",
            f"compute_subnet_id {net.compute_subnet_id} is given without vpc_id; give the "
            "subnet's vpc_id too (or drop compute_subnet_id to create a new VPC)",
        )


# why: options of the other network mode are silently ignored, which hides a mistake.
@rule
def vpc_options_mixed(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    net = spec.network
    if net.vpc_id is not None:
        if "vpc_cidr" in net.model_fields_set and net.vpc_cidr is not None:
            yield error(
                "network.vpc_cidr",
                f"vpc_cidr {net.vpc_cidr} is ignored with an existing vpc_id; remove it (give "
                "compute_subnet_cidr to describe the existing subnet)",
            )
        if net.compute_subnet_prefix is not None:
            yield error(
                "network.compute_subnet_prefix",
                "compute_subnet_prefix only applies to a new VPC; with vpc_id, give "
                "compute_subnet_cidr (the existing subnet's CIDR) instead",
            )
    else:
        if net.compute_subnet_cidr is not None:
            yield error(
                "network.compute_subnet_cidr",
                "compute_subnet_cidr describes an existing subnet and needs vpc_id and "
                "compute_subnet_id; for a new VPC use compute_subnet_prefix",
            )
        if net.public_subnet_id is not None:
            yield error(
                "network.public_subnet_id",
                "public_subnet_id needs vpc_id (an existing VPC); a new VPC gets its own "
                "public subnet",
            )


# why: the compute subnet must fit in the VPC and leave room for the public subnet.
@rule
def compute_subnet_prefix(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    vpc = _new_vpc(spec)
    prefix = spec.network.compute_subnet_prefix
    if vpc is None or prefix is None or not 16 <= vpc.prefixlen <= 24:
        return
    if prefix < vpc.prefixlen:
        yield error(
            "network.compute_subnet_prefix",
            f"a /{prefix} compute subnet does not fit in the /{vpc.prefixlen} VPC {vpc}; "
            f"use a prefix of /{vpc.prefixlen + 1} or longer",
        )
        return
    _, public, compute = carve(spec)
    if compute is not None and public is not None and compute.overlaps(public):
        yield error(
            "network.compute_subnet_prefix",
            f"a /{prefix} compute subnet ({compute}) overlaps the public subnet {public} that "
            f"slurmstack carves from the end of the VPC; use /{vpc.prefixlen + 1} or longer",
        )


# why: a node that gets no address never launches; count what each interface layout takes,
# for every pool at max_count (elastic nodes need theirs when they start).
@rule
def compute_subnet_capacity(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    subnet = compute_subnet(spec)
    if subnet is None:
        return
    fixed = _fixed_addresses(spec)
    nodes = _per_node_addresses(spec, catalog)
    node_total = sum(per_node * count for _, per_node, count in nodes)
    needed = sum(fixed.values()) + node_total
    if needed > subnet.num_addresses:
        parts = ", ".join(f"{n} {what}" for what, n in fixed.items())
        pools = ", ".join(
            f"{spec.pools[i].name}: {count} x {per_node}" for i, per_node, count in nodes
        )
        yield error(
            _subnet_path(spec),
            f"compute subnet {subnet} has {subnet.num_addresses} addresses but the cluster "
            f"needs {needed} ({parts}; nodes x addresses each: {pools}); use a larger subnet",
        )


# why: see REPLACEMENT_HEADROOM_FRACTION; a full subnet blocks replacing a failed node.
@rule
def compute_subnet_headroom(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    subnet = compute_subnet(spec)
    if subnet is None:
        return
    nodes = _per_node_addresses(spec, catalog)
    needed = sum(_fixed_addresses(spec).values()) + sum(p * c for _, p, c in nodes)
    if needed > subnet.num_addresses:
        return  # compute_subnet_capacity reports it
    spare = sum(
        per_node * max(1, math.ceil(count * REPLACEMENT_HEADROOM_FRACTION))
        for _, per_node, count in nodes
        if count > 0
    )
    if needed + spare > subnet.num_addresses:
        yield warning(
            _subnet_path(spec),
            f"compute subnet {subnet} leaves {subnet.num_addresses - needed} free addresses; "
            f"replacing failed nodes needs about {spare} more (10% of each pool); use a "
            "larger subnet",
        )


# why: slurmstack cannot check that an existing subnet has room for every node without its CIDR.
@rule
def compute_subnet_cidr_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    net = spec.network
    known = net.compute_subnet_cidr is not None
    if net.vpc_id is not None and net.compute_subnet_id is not None and not known:
        yield warning(
            "network.compute_subnet_cidr",
            f"give the CIDR of {net.compute_subnet_id} as compute_subnet_cidr so slurmstack "
            "can check that it has an address for every node interface",
        )


# why: SSH open to the whole internet invites brute force; SSM Session Manager needs no port.
@rule
def ssh_open_world(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, cidr in enumerate(spec.network.ssh_cidrs):
        if cidr.prefixlen == 0:
            yield warning(
                f"network.ssh_cidrs[{index}]",
                f"{cidr} opens SSH on the head node to the whole internet; list your own "
                "ranges, or leave ssh_cidrs empty and use SSM Session Manager",
            )


# why: in an existing VPC the head node needs a public subnet to be reachable over SSH at all.
@rule
def ssh_without_public_subnet(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    net = spec.network
    if net.vpc_id is not None and net.ssh_cidrs and net.public_subnet_id is None:
        yield error(
            "network.public_subnet_id",
            "ssh_cidrs allows SSH, but the existing VPC has no public_subnet_id for the head "
            "node to be reached through; give public_subnet_id, or empty ssh_cidrs and use SSM",
        )
