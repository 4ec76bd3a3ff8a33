"""IAM for data the cluster reads and writes beyond its own bucket's config store, as pure
functions (no Pulumi): the node roles' access to exactly the buckets and prefixes mounted with
Mountpoint for Amazon S3, and the bucket-policy statements the owner of another account's bucket
adds for a Mountpoint mount or a data repository association.

Mountpoint's needs (its CONFIGURATION.md at the pinned release, "IAM permissions"):
s3:ListBucket on the bucket, scoped to a prefix by the s3:prefix condition key (ListBucket's
Resource is the bucket, never a prefix); s3:GetObject to read; s3:PutObject and
s3:AbortMultipartUpload to write; s3:DeleteObject only with --allow-delete. Nothing else: no
other bucket, no other prefix, no bucket setting.

Mountpoint runs as root on the node and takes the instance role's credentials from the metadata
service, which only root reaches (slurmstack.imds_firewall): a job user reads the mount through
FUSE (allow-other) but never holds the credentials, so the statements below serve the mount,
not the user's own programs.

A data repository association needs nothing of the node roles: FSx reads and writes the bucket
with its own service-linked role (AWSServiceRoleForFSxS3Access_<file system id>, FSx for Lustre
User Guide, "Using service-linked roles for Amazon FSx"), made when the association is created
with the deployer's permissions (s3:Get*, s3:List*, s3:PutObject on the prefix, which FSx
checks: "Amazon FSx is unable to validate access to the S3 bucket" otherwise).
"""

from __future__ import annotations

from typing import Any

from slurmstack.contract import partition
from slurmstack.plan import AssociationPlan, ClusterPlan, S3MountPlan

READ_ACTIONS = ("s3:GetObject",)
WRITE_ACTIONS = ("s3:PutObject", "s3:AbortMultipartUpload")
DELETE_ACTIONS = ("s3:DeleteObject",)
# FSx's service-linked role for S3 access, per file system (made by FSx, in the file system's
# account), and what it does with a linked bucket: read and write objects, list, and set the
# event notifications automatic import listens to.
FSX_S3_ROLE_PATH = "aws-service-role/s3.data-source.lustre.fsx.amazonaws.com"
ASSOCIATION_OBJECT_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload",
                              "s3:DeleteObject")  # fmt: skip
ASSOCIATION_BUCKET_ACTIONS = (
    "s3:ListBucket",
    "s3:GetBucketLocation",
    "s3:GetBucketNotification",
    "s3:PutBucketNotification",
)


def bucket_arn_of(plan: ClusterPlan, bucket: str) -> str:
    return f"arn:{partition(plan.region)}:s3:::{bucket}"


def _bucket(plan: ClusterPlan, bucket: str | None, cluster_bucket_arn: str) -> str:
    return cluster_bucket_arn if bucket is None else bucket_arn_of(plan, bucket)


def mount_actions(mount: S3MountPlan) -> list[str]:
    """The object actions a mount's options need."""
    actions = list(READ_ACTIONS)
    if mount.writes:
        actions += WRITE_ACTIONS
        if mount.allow_delete:
            actions += DELETE_ACTIONS
    return actions


def mountpoint_statements(plan: ClusterPlan, cluster_bucket_arn: str) -> list[dict[str, Any]]:
    """The node roles' statements for storage.s3_mounts: per mount, listing its prefix and the
    object actions its options need on that prefix, and nothing beyond."""
    statements: list[dict[str, Any]] = []
    for index, mount in enumerate(plan.s3_mounts):
        bucket = _bucket(plan, mount.bucket, cluster_bucket_arn)
        listing: dict[str, Any] = {
            "Sid": f"MountpointList{index}",
            "Effect": "Allow",
            "Action": ["s3:ListBucket"],
            "Resource": [bucket],
        }
        if mount.prefix:
            listing["Condition"] = {"StringLike": {"s3:prefix": [mount.prefix, f"{mount.prefix}*"]}}
        statements += [
            listing,
            {
                "Sid": f"MountpointObjects{index}",
                "Effect": "Allow",
                "Action": mount_actions(mount),
                "Resource": [f"{bucket}/{mount.prefix}*"],
            },
        ]
    return statements


def mountpoint_bucket_policy(
    plan: ClusterPlan, mount: S3MountPlan, role_arns: list[str]
) -> dict[str, Any]:
    """What the owner of ``mount``'s bucket adds to its bucket policy when the bucket is in
    another account (an identity policy alone does not cross accounts): the cluster's node
    roles, the same actions on the same prefix."""
    assert mount.bucket is not None, "the cluster bucket is the stack's own"
    bucket = bucket_arn_of(plan, mount.bucket)
    listing: dict[str, Any] = {
        "Sid": f"{plan.name}-mountpoint-list".replace("-", ""),
        "Effect": "Allow",
        "Principal": {"AWS": sorted(role_arns)},
        "Action": ["s3:ListBucket"],
        "Resource": [bucket],
    }
    if mount.prefix:
        listing["Condition"] = {"StringLike": {"s3:prefix": [mount.prefix, f"{mount.prefix}*"]}}
    return {
        "Version": "2012-10-17",
        "Statement": [
            listing,
            {
                "Sid": f"{plan.name}-mountpoint-objects".replace("-", ""),
                "Effect": "Allow",
                "Principal": {"AWS": sorted(role_arns)},
                "Action": mount_actions(mount),
                "Resource": [f"{bucket}/{mount.prefix}*"],
            },
        ],
    }


def fsx_s3_role_arn(plan: ClusterPlan, account: str, file_system_id: str) -> str:
    return (
        f"arn:{partition(plan.region)}:iam::{account}:role/{FSX_S3_ROLE_PATH}/"
        f"AWSServiceRoleForFSxS3Access_{file_system_id}"
    )


def association_bucket_policy(
    plan: ClusterPlan, association: AssociationPlan, account: str, file_system_id: str
) -> dict[str, Any]:
    """What the owner of an association's bucket in another account adds to its bucket policy:
    FSx's role for this file system, on the association's prefix only."""
    assert association.bucket is not None, "the cluster bucket is the stack's own"
    bucket = bucket_arn_of(plan, association.bucket)
    role = fsx_s3_role_arn(plan, account, file_system_id)
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "FsxLinkBucket",
                "Effect": "Allow",
                "Principal": {"AWS": [role]},
                "Action": list(ASSOCIATION_BUCKET_ACTIONS),
                "Resource": [bucket],
            },
            {
                "Sid": "FsxLinkObjects",
                "Effect": "Allow",
                "Principal": {"AWS": [role]},
                "Action": list(ASSOCIATION_OBJECT_ACTIONS),
                "Resource": [f"{bucket}/{association.prefix}*"],
            },
        ],
    }
