"""What the plan decides about the network: the subnets of a new VPC (slurmstack.rules.subnets, which
the checks share), each pool's interface layout (slurmstack.rules.efa), and where the head node sits."""

from __future__ import annotations

from slurmstack.spec import ClusterSpec


def head_in_public_subnet(spec: ClusterSpec) -> bool:
    """SSH from ssh_cidrs needs a reachable address: the head node then sits in the public
    subnet (the new VPC's, or network.public_subnet_id) with a public IP; otherwise it is
    private, reached through Session Manager. (The stack decides the same way, from the
    public subnet it has: stack.head_node.head_in_public_subnet.)"""
    net = spec.network
    return bool(net.ssh_cidrs) and (net.vpc_id is None or net.public_subnet_id is not None)
