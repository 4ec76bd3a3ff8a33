"""File systems of yours (storage.existing, an existing /home): looked up at deploy time, never
created, changed or deleted.

Each is read, not managed: FSx for Lustre and OpenZFS file systems through the provider's
``get`` (a read: Pulumi records the state it found and never updates or deletes it), EFS through
its data source. What the nodes need to mount it is published as deploy parameters
(contract.existing_parameter), and the security groups on its network interfaces are read and
checked against the cluster's subnets and client groups (slurmstack.stack.reachability). Every
lookup's input is known before anything is created, so ``pulumi preview`` already runs the
check: a file system the nodes could not reach stops the deployment before it starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import pulumi
import pulumi_aws.ec2 as ec2
import pulumi_aws.efs as efs
import pulumi_aws.fsx as fsx
import pulumi_aws.vpc as vpc

from slurmstack.contract import (
    EXISTING_DNS,
    EXISTING_MOUNT_NAME,
    MountKind,
    existing_parameter,
    resource_name,
)
from slurmstack.plan import ClusterPlan, ExistingFileSystemPlan
from slurmstack.stack import parameters
from slurmstack.stack.common import Role
from slurmstack.stack.reachability import (
    FileSystemNetwork,
    ingress_rule,
    reachability_problems,
)


def efs_mount_target_description(file_system_id: str) -> str:
    """EFS names each mount target's network interface so (EC2 shows it as the description)."""
    return f"EFS mount target for {file_system_id}*"


class ExistingFileSystems(pulumi.ComponentResource):
    """Lookups and checks only: the one kind of resource this component registers is the SSM
    parameters that tell the nodes what it found."""

    # file system id -> what the lookup found (for the stack's outputs and the tests)
    dns_names: dict[str, pulumi.Output[str]]

    def __init__(
        self,
        plan: ClusterPlan,
        *,
        vpc_id: str,
        subnet_ids: Sequence[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        name = resource_name(plan.name, Role.DATA)
        super().__init__("slurmstack:stack:ExistingFileSystems", name, None, opts)
        self.plan = plan
        self._invoke = pulumi.InvokeOutputOptions(parent=self)
        cidrs = pulumi.Output.all(
            *[ec2.get_subnet_output(id=s, opts=self._invoke).cidr_block for s in subnet_ids]
        )
        self.dns_names = {}
        for fs in plan.existing_file_systems:
            dns, mount_name, interfaces = self._look_up(fs)
            network = interfaces.apply(partial(self._network, fs))
            checked = pulumi.Output.all(network, cidrs).apply(partial(self._check, fs, vpc_id))
            # The names reach the nodes only through the check: an unreachable file system
            # fails the deployment (and the preview) instead of a boot an hour later.
            dns = pulumi.Output.all(dns, checked).apply(lambda args: str(args[0]))
            self.dns_names[fs.file_system_id] = dns
            if fs.kind is not MountKind.EFS:
                self._publish(fs, EXISTING_DNS, dns)
            if mount_name is not None:
                self._publish(fs, EXISTING_MOUNT_NAME, mount_name)
        self.register_outputs({"file_systems": self.dns_names})

    def _look_up(
        self, fs: ExistingFileSystemPlan
    ) -> tuple[pulumi.Output[str], pulumi.Output[str] | None, pulumi.Output[list[str]]]:
        """(DNS name, Lustre mount name or None, network interface ids in the cluster's zone)."""
        read = pulumi.ResourceOptions(parent=self)
        logical = resource_name(self.plan.name, f"existing-{fs.file_system_id}")
        if fs.kind is MountKind.LUSTRE:
            lustre = fsx.LustreFileSystem.get(logical, fs.file_system_id, opts=read)
            return (
                lustre.dns_name,
                lustre.mount_name,
                lustre.network_interface_ids.apply(lambda ids: list(ids or [])),
            )
        if fs.kind is MountKind.OPENZFS:
            zfs = fsx.OpenZfsFileSystem.get(logical, fs.file_system_id, opts=read)
            return (
                zfs.dns_name,
                None,
                zfs.network_interface_ids.apply(lambda ids: list(ids or [])),
            )
        found = efs.get_file_system_output(file_system_id=fs.file_system_id, opts=self._invoke)
        targets = ec2.get_network_interfaces_output(
            filters=[
                {
                    "name": "description",
                    "values": [efs_mount_target_description(fs.file_system_id)],
                },
                {"name": "availability-zone", "values": [self.plan.availability_zone]},
            ],
            opts=self._invoke,
        )
        return found.dns_name, None, targets.ids.apply(lambda ids: list(ids or []))

    def _network(self, fs: ExistingFileSystemPlan, interfaces: list[str]) -> Any:
        empty = FileSystemNetwork(fs.file_system_id, fs.kind, "", (), ())
        if not interfaces:
            return empty
        interface = ec2.get_network_interface_output(id=interfaces[0], opts=self._invoke)

        def rules_of(args: list[Any]) -> Any:
            vpc_of, groups = str(args[0]), tuple(args[1] or ())
            ids = vpc.get_security_group_rules_output(
                filters=[{"name": "group-id", "values": list(groups)}], opts=self._invoke
            ).ids
            return ids.apply(
                lambda rule_ids: pulumi.Output.all(
                    *[
                        vpc.get_security_group_rule_output(
                            security_group_rule_id=rule_id, opts=self._invoke
                        )
                        for rule_id in (rule_ids or [])
                    ]
                ).apply(lambda found: _network_of(fs, vpc_of, groups, found))
            )

        return pulumi.Output.all(interface.vpc_id, interface.security_groups).apply(rules_of)

    def _check(self, fs: ExistingFileSystemPlan, vpc_id: str, args: list[Any]) -> bool:
        network: FileSystemNetwork = args[0]
        cidrs = tuple(str(c) for c in args[1])
        groups = {g: f"{g} (your client group)" for g in self.plan.existing_client_groups}
        problems = reachability_problems(
            network,
            vpc_id=vpc_id,
            subnet_cidrs=cidrs,
            node_groups=groups,
            definition_path=fs.definition_path,
        )
        if problems:
            raise pulumi.RunError("; ".join(problems))
        return True

    def _publish(self, fs: ExistingFileSystemPlan, what: str, value: pulumi.Input[str]) -> None:
        parameters.publish(
            self.plan,
            existing_parameter(fs.file_system_id, what),
            value,
            role=Role.DATA,
            parent=self,
        )


def _network_of(
    fs: ExistingFileSystemPlan, vpc_of: str, groups: tuple[str, ...], found: list[Any]
) -> FileSystemNetwork:
    rules = tuple(
        ingress_rule(
            str(r.security_group_id),
            {
                "ip_protocol": r.ip_protocol,
                "from_port": r.from_port,
                "to_port": r.to_port,
                "cidr_ipv4": r.cidr_ipv4,
                "referenced_security_group_id": r.referenced_security_group_id,
            },
        )
        for r in found
        if not r.is_egress
    )
    return FileSystemNetwork(fs.file_system_id, fs.kind, vpc_of, groups, rules)
