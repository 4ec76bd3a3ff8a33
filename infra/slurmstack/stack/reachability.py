"""Whether the cluster's nodes can reach a file system they did not make, from what the stack
looked up at deploy time (the file system's network interfaces, their security groups and those
groups' rules). Pure: the stack calls it inside an apply; the tests call it directly.

A node reaches the file system when, for every port the client needs, one inbound rule of one
of the file system's groups admits TCP on that port from the node: from a CIDR holding the
cluster's subnet, or from a security group the node is in (the head's, the workers', or the
client group the definition names). The cluster's own groups allow every outbound connection,
so inbound is the whole question.

Ports: Lustre needs 988 and the callbacks 1018-1023 (FSx for Lustre User Guide, "File system
access control with Amazon VPC"); EFS and OpenZFS over NFSv4.1 need 2049 (Amazon EFS User Guide,
"Using VPC security groups"; FSx for OpenZFS User Guide, "Amazon VPC security groups": NFSv4
uses 2049 only).
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

from slurmstack.contract import MountKind
from slurmstack.stack.common import LUSTRE_CALLBACK_PORTS, LUSTRE_PORT, NFS_PORT

PORTS: dict[MountKind, tuple[tuple[int, int], ...]] = {
    MountKind.LUSTRE: ((LUSTRE_PORT, LUSTRE_PORT), LUSTRE_CALLBACK_PORTS),
    MountKind.EFS: ((NFS_PORT, NFS_PORT),),
    MountKind.OPENZFS: ((NFS_PORT, NFS_PORT),),
}


@dataclass(frozen=True)
class IngressRule:
    """One inbound rule of a file system's security group, as getSecurityGroupRule returns it."""

    group: str
    protocol: str  # "tcp", "-1" (all), ...
    from_port: int
    to_port: int
    cidr: str = ""
    referenced_group: str = ""

    def admits(
        self, ports: tuple[int, int], cidrs: tuple[str, ...], groups: frozenset[str]
    ) -> bool:
        if self.protocol not in ("tcp", "6", "-1"):
            return False
        if self.protocol != "-1" and not (self.from_port <= ports[0] and ports[1] <= self.to_port):
            return False
        if self.referenced_group:
            return self.referenced_group in groups
        if not self.cidr:
            return False
        rule_net = IPv4Network(self.cidr, strict=False)
        return all(IPv4Network(c, strict=False).subnet_of(rule_net) for c in cidrs)


@dataclass(frozen=True)
class FileSystemNetwork:
    """What the lookups found: the file system's VPC and the groups on its interfaces."""

    file_system_id: str
    kind: MountKind
    vpc_id: str
    groups: tuple[str, ...]
    rules: tuple[IngressRule, ...]


def _ports(ports: tuple[int, int]) -> str:
    return str(ports[0]) if ports[0] == ports[1] else f"{ports[0]}-{ports[1]}"


def reachability_problems(
    found: FileSystemNetwork,
    *,
    vpc_id: str,
    subnet_cidrs: tuple[str, ...],
    node_groups: dict[str, str],
    definition_path: str,
) -> list[str]:
    """Why the nodes cannot reach the file system, one sentence each naming what to change
    (empty: they can). ``node_groups``: security group id -> what it is (the head's group, the
    workers' group, your client group); ``subnet_cidrs``: the subnets the nodes live in."""
    fs = found.file_system_id
    if found.vpc_id and found.vpc_id != vpc_id:
        return [
            f"{definition_path}: {fs} is in {found.vpc_id}, the cluster in {vpc_id}; nodes reach "
            "it only through peering or a transit gateway: deploy the cluster into "
            f"{found.vpc_id} (network.vpc_id)"
        ]
    if not found.groups:
        return [f"{definition_path}: {fs} has no network interface in the cluster's zone"]
    problems = []
    groups = frozenset(node_groups)
    for ports in PORTS[found.kind]:
        if any(rule.admits(ports, subnet_cidrs, groups) for rule in found.rules):
            continue
        problems.append(
            f"{definition_path}: the security groups of {fs} ({', '.join(found.groups)}) admit "
            f"no TCP {_ports(ports)} from the cluster's nodes (subnets "
            f"{', '.join(subnet_cidrs)}; groups: {', '.join(sorted(node_groups.values())) or 'none'}"
            "): add "
            f"an inbound rule for TCP {_ports(ports)} from {subnet_cidrs[0]} to "
            f"{found.groups[0]}, or name a group it admits as client_security_group_id"
        )
    return problems


def ingress_rule(group: str, rule: dict[str, object]) -> IngressRule:
    """An IngressRule from getSecurityGroupRule's result (its snake_case keys)."""
    return IngressRule(
        group=group,
        protocol=str(rule.get("ip_protocol") or ""),
        from_port=int(str(rule.get("from_port") or 0)),
        to_port=int(str(rule.get("to_port") or 0)),
        cidr=str(rule.get("cidr_ipv4") or ""),
        referenced_group=str(rule.get("referenced_security_group_id") or ""),
    )
