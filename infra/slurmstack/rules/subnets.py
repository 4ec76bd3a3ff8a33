"""How a new VPC is split into the compute and the public subnet.

Shared by the checks (subnet sizes, overlaps) and the plan. Pure: no Pulumi import.
"""

from __future__ import annotations

import ipaddress

from slurmstack.spec import ClusterSpec

Network = ipaddress.IPv4Network


def carve(spec: ClusterSpec) -> tuple[Network | None, Network | None, Network | None]:
    """(vpc, public, compute) CIDRs. A new VPC is split: compute gets the first half (or
    the requested prefix), public gets a /24-or-smaller slice at the end. In an existing VPC
    only the compute subnet's CIDR may be known (network.compute_subnet_cidr)."""
    net = spec.network
    if net.vpc_id is not None:
        return None, None, net.compute_subnet_cidr
    vpc = net.vpc_cidr
    if vpc is None:
        return None, None, None
    compute_prefix = net.compute_subnet_prefix or min(vpc.prefixlen + 1, 28)
    compute = (
        next(vpc.subnets(new_prefix=compute_prefix)) if compute_prefix >= vpc.prefixlen else None
    )
    public_prefix = max(vpc.prefixlen + 2, 24) if vpc.prefixlen <= 26 else 28
    public = list(vpc.subnets(new_prefix=min(public_prefix, 28)))[-1]
    return vpc, public, compute
