"""EFS for /home: encrypted, elastic throughput, one mount target in the compute subnet."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_aws.efs as efs

from slurmstack.contract import DeployParameter, resource_name
from slurmstack.plan import ClusterPlan
from slurmstack.stack import parameters
from slurmstack.stack.bucket import stateful_options
from slurmstack.stack.common import Role, tags


class HomeFileSystem(pulumi.ComponentResource):
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
        """``security_ready``: the storage group's rules (NFS from the head and the workers);
        the mount target is created, and its id published, only once they exist."""
        name = resource_name(plan.name, Role.HOME)
        super().__init__("slurmstack:stack:HomeFileSystem", name, None, opts)
        # Retained as well as protected when storage.protect: /home is user data and costs
        # little to keep.
        self.file_system = shared_file_system(
            plan,
            name,
            Role.HOME,
            DeployParameter.EFS_ID,
            subnet_id=subnet_id,
            security_group_id=security_group_id,
            security_ready=security_ready,
            parent=self,
        )
        self.register_outputs({"id": self.file_system.id})


def shared_file_system(
    plan: ClusterPlan,
    name: str,
    role: Role,
    parameter: DeployParameter,
    *,
    subnet_id: pulumi.Input[str],
    security_group_id: pulumi.Input[str],
    security_ready: Sequence[pulumi.Resource],
    parent: pulumi.Resource,
) -> efs.FileSystem:
    """An encrypted EFS file system (General Purpose, elastic throughput), kept on delete when
    storage.protect, its mount target in the compute subnet, and its id published as
    ``parameter`` once the mount target exists: a node that sees the id can mount it."""
    file_system = efs.FileSystem(
        name,
        creation_token=name,
        encrypted=True,
        performance_mode="generalPurpose",
        # Elastic: pay per use, bursts for parallel `pip install`s on every node.
        throughput_mode="elastic",
        tags=tags(plan, role, name),
        opts=stateful_options(plan, parent, retain=True),
    )
    mount_target = efs.MountTarget(
        name,
        file_system_id=file_system.id,
        subnet_id=subnet_id,
        security_groups=[security_group_id],
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(security_ready)),
    )
    parameters.publish(
        plan, parameter, file_system.id, role=role, parent=parent, depends_on=[mount_target]
    )
    return file_system
