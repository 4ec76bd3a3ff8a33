"""The backup controller (head_node.backup) and the file system Slurm's state moves to.

The backup is a second instance of the head's image and user data, in the compute subnet: the
same bootstrap runs, and `slurmstack-node params` tells it it is the backup by its address (the
BACKUP_ADDRESS parameter's). Like the head it keeps its address on a network interface of its
own, so every node's slurm.conf (SlurmctldHost twice) and /etc/hosts stay right across its
replacement.

Slurm's state (StateSaveLocation) must be on storage both controllers reach: an EFS file system,
encrypted, elastic throughput, mounted at the path the head's EBS state volume takes without a
backup. Why EFS: it is the shared file system both Availability-Zone-local controllers can mount
read-write at once with close-to-open consistency, which Slurm's state files (written to a new
name, then renamed) rely on; FSx for Lustre would tie the controllers to a scratch file system's
lifetime and a minimum 1.2 TiB, and an EBS Multi-Attach volume needs a cluster file system on it.
slurmctld saves at most every 5 s and fsyncs each file (state_save.c); on EFS a small fsynced write
takes single milliseconds (Amazon EFS User Guide, "Performance": General Purpose mode's latency),
far inside that interval. docs/head-failure.md has what was measured here and what needs AWS.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_aws.ec2 as ec2
import pulumi_aws.efs as efs

from slurmstack.contract import DeployParameter, resource_name
from slurmstack.plan import ClusterPlan
from slurmstack.stack import parameters
from slurmstack.stack.common import Role, tags
from slurmstack.stack.efs import shared_file_system
from slurmstack.stack.head_node import USER_DATA_PROPERTY, controller_instance_inputs

BACKUP_SUFFIX = "backup"
STATE_SUFFIX = "state"


class StateFileSystem(pulumi.ComponentResource):
    """Slurm's state on EFS, shared by the head and the backup controller."""

    file_system: efs.FileSystem

    def __init__(
        self,
        plan: ClusterPlan,
        *,
        subnet_id: pulumi.Input[str],
        security_group_id: pulumi.Input[str],
        security_ready: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        name = resource_name(plan.name, Role.HEAD, STATE_SUFFIX)
        super().__init__("slurmstack:stack:StateFileSystem", name, None, opts)
        # Kept on delete (when storage.protect), like the head's EBS state volume: the queue,
        # the nodes and the job ids of a cluster that may be rebuilt.
        self.file_system = shared_file_system(
            plan,
            name,
            Role.HEAD,
            DeployParameter.STATE_EFS_ID,
            subnet_id=subnet_id,
            security_group_id=security_group_id,
            security_ready=security_ready,
            parent=self,
        )
        self.register_outputs({"id": self.file_system.id})


class BackupController(pulumi.ComponentResource):
    """The second SlurmctldHost: the head's image and user data on an instance of its own."""

    instance: ec2.Instance
    interface: ec2.NetworkInterface

    def __init__(
        self,
        plan: ClusterPlan,
        *,
        subnet_id: pulumi.Input[str],
        security_group_id: pulumi.Input[str],
        instance_profile: pulumi.Input[str],
        ami: pulumi.Input[str],
        ready: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``ami``: the head's (its release parameter's value: both controllers run one Slurm);
        ``ready``: the routes and the head group's rules its first boot needs."""
        name = resource_name(plan.name, Role.HEAD, BACKUP_SUFFIX)
        super().__init__("slurmstack:stack:BackupController", name, None, opts)
        self.interface = ec2.NetworkInterface(
            name,
            subnet_id=subnet_id,
            security_groups=[security_group_id, *plan.existing_client_groups],
            description=f"slurmstack {plan.name}: the backup controller's address (kept)",
            tags=tags(plan, Role.HEAD, name),
            opts=pulumi.ResourceOptions(parent=self),
        )
        address = parameters.publish(
            plan,
            DeployParameter.BACKUP_ADDRESS,
            self.interface.private_ip,
            role=Role.HEAD,
            parent=self,
        )
        self.instance = ec2.Instance(
            name,
            ami=ami,
            primary_network_interface={"network_interface_id": self.interface.id},
            iam_instance_profile=instance_profile,
            # The head's own document: `params` finds which controller it is by its address.
            **controller_instance_inputs(plan, name),
            opts=pulumi.ResourceOptions(
                parent=self,
                # As the head's (slurmstack.stack.head_node): a new document is applied by
                # replacing the instance, never by stopping it.
                ignore_changes=[USER_DATA_PROPERTY],
                depends_on=[*ready, address],
                delete_before_replace=True,
            ),
        )
        self.register_outputs({"id": self.instance.id, "private_ip": self.interface.private_ip})
