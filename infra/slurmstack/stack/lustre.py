"""FSx for Lustre, the shared hot tier, and its data repository association to the bucket."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws.fsx as fsx

from slurmstack.contract import DeployParameter, resource_name
from slurmstack.plan import AssociationPlan, ClusterPlan, LustrePlan
from slurmstack.rules.data import mount_key
from slurmstack.spec import LustreDeployment
from slurmstack.stack import parameters
from slurmstack.stack.bucket import stateful_options
from slurmstack.stack.common import Role, tags

# EFA-enabled file systems and the metadata configuration need Lustre 2.15.
LUSTRE_VERSION = "2.15"
PERSISTENT = {LustreDeployment.PERSISTENT_1, LustreDeployment.PERSISTENT_2}


def lustre_args(lustre: LustrePlan) -> dict[str, Any]:
    """Arguments of the file system that follow from the plan (pure: tested directly)."""
    spec = lustre.spec
    args: dict[str, Any] = {
        "deployment_type": spec.deployment.value,
        "storage_capacity": spec.capacity_gib,
        "storage_type": spec.storage_type.value,
        "data_compression_type": spec.compression,
        "file_system_type_version": LUSTRE_VERSION,
    }
    if spec.deployment in PERSISTENT and lustre.per_unit_storage_throughput is not None:
        args["per_unit_storage_throughput"] = lustre.per_unit_storage_throughput
    if spec.deployment is LustreDeployment.PERSISTENT_2:
        args["metadata_configuration"] = (
            {"mode": "USER_PROVISIONED", "iops": spec.metadata_iops}
            if spec.metadata_iops is not None
            else {"mode": "AUTOMATIC"}
        )
    if lustre.efa:
        args["efa_enabled"] = True
    return args


def association_name(file_system: str, association: AssociationPlan) -> str:
    """``{cluster}-lustre-dra`` for s3_import_export's (the name it always had), else
    ``{cluster}-lustre-dra-<directory>``."""
    if association.bucket is None and association.definition_path.endswith("s3_import_export"):
        return f"{file_system}-dra"
    return f"{file_system}-dra-{mount_key(association.file_system_path)}"


def repository_policies(association: AssociationPlan) -> fsx.DataRepositoryAssociationS3Args:
    """The association's automatic import and export, each only when it has events."""
    return fsx.DataRepositoryAssociationS3Args(
        auto_import_policy=(
            fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(
                events=list(association.import_events)
            )
            if association.import_events
            else None
        ),
        auto_export_policy=(
            fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(
                events=list(association.export_events)
            )
            if association.export_events
            else None
        ),
    )


class LustreStorage(pulumi.ComponentResource):
    """The file system (protected, not retained: an orphaned Lustre file system keeps billing
    by the TiB-hour) and, when asked, a data repository association importing on access and
    exporting on change."""

    file_system: fsx.LustreFileSystem

    def __init__(
        self,
        plan: ClusterPlan,
        *,
        subnet_id: pulumi.Input[str],
        security_group_id: pulumi.Input[str],
        bucket: pulumi.Input[str],
        security_ready: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``security_ready``: the storage group's ingress and egress rules. FSx checks them
        when it creates the file system and fails with InvalidNetworkSettings if they are not
        there yet (SecurityGroups.rules_of)."""
        name = resource_name(plan.name, Role.LUSTRE)
        super().__init__("slurmstack:stack:LustreStorage", name, None, opts)
        lustre = plan.lustre
        if lustre is None:
            raise ValueError("LustreStorage needs storage.lustre")
        self.file_system = fsx.LustreFileSystem(
            name,
            # One subnet, given as a string: pulumi-aws 7 flattens this one-item list.
            subnet_ids=subnet_id,
            security_group_ids=[security_group_id],
            tags=tags(plan, Role.LUSTRE, name),
            opts=pulumi.ResourceOptions.merge(
                stateful_options(plan, self, retain=False),
                pulumi.ResourceOptions(depends_on=list(security_ready)),
            ),
            **lustre_args(lustre),
        )
        # FSx works on one association request at a time per file system (the rest queue,
        # up to 8): each waits for the one before, so none fails on a busy file system.
        self.associations: list[fsx.DataRepositoryAssociation] = []
        for association in plan.associations:
            logical = association_name(name, association)
            self.associations.append(
                fsx.DataRepositoryAssociation(
                    logical,
                    file_system_id=self.file_system.id,
                    file_system_path=association.file_system_path,
                    data_repository_path=pulumi.Output.from_input(bucket).apply(
                        association.repository
                    ),
                    batch_import_meta_data_on_create=association.batch_import,
                    # Removing the association must never delete file system data.
                    delete_data_in_filesystem=False,
                    s3=repository_policies(association),
                    tags=tags(plan, Role.LUSTRE, logical),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=self.associations[-1:]),
                )
            )
        parameters.publish(
            plan,
            DeployParameter.LUSTRE_DNS,
            self.file_system.dns_name,
            role=Role.LUSTRE,
            parent=self,
        )
        parameters.publish(
            plan,
            DeployParameter.LUSTRE_MOUNT_NAME,
            self.file_system.mount_name,
            role=Role.LUSTRE,
            parent=self,
        )
        self.register_outputs(
            {"dns_name": self.file_system.dns_name, "mount_name": self.file_system.mount_name}
        )
