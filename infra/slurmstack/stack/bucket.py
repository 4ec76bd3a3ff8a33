"""The cluster bucket: durable datasets and checkpoints, and the config store's objects.
Versioned, encrypted, public access blocked, objects owned by the bucket owner, old
checkpoint versions expired after the definition's number of days. Its policy
(slurmstack.stack.policies.bucket_policy) refuses requests without TLS, writes to the config
store by the cluster's nodes, and deleting object versions by anyone but an administrator."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws.s3 as s3
from pulumi_aws import get_caller_identity_output

from slurmstack.contract import LAUNCHES_PREFIX, DeployParameter, resource_name
from slurmstack.plan import ClusterPlan
from slurmstack.stack import parameters, policies
from slurmstack.stack.common import Role, tags

ABORT_INCOMPLETE_UPLOADS_DAYS = 7
# The elastic launches' names (LAUNCHES_PREFIX): a node reads its own at boot, minutes after
# the launch; a day later nothing reads them.
LAUNCH_NAMES_DAYS = 1


def stateful_options(
    plan: ClusterPlan, parent: pulumi.Resource, *, retain: bool
) -> pulumi.ResourceOptions:
    """protect (and retain_on_delete where keeping the data is cheap) unless storage.protect
    is false."""
    keep = plan.spec.storage.protect
    return pulumi.ResourceOptions(parent=parent, protect=keep, retain_on_delete=keep and retain)


class ClusterBucket(pulumi.ComponentResource):
    bucket: s3.Bucket

    def __init__(self, plan: ClusterPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        name = resource_name(plan.name, Role.BUCKET)
        super().__init__("slurmstack:stack:ClusterBucket", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec = plan.spec.storage.bucket
        protect = plan.spec.storage.protect
        # Auto-named (name + random suffix): bucket names are global. Retained on delete when
        # protected: a non-empty bucket cannot be deleted anyway, and retaining it lets
        # `pulumi destroy` finish while datasets and checkpoints stay.
        self.bucket = s3.Bucket(
            name,
            force_destroy=not protect,
            tags=tags(plan, Role.BUCKET, name),
            opts=stateful_options(plan, self, retain=True),
        )
        bucket_id = self.bucket.id
        s3.BucketOwnershipControls(
            name, bucket=bucket_id, rule={"object_ownership": "BucketOwnerEnforced"}, opts=child
        )
        public_access = s3.BucketPublicAccessBlock(
            name,
            bucket=bucket_id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=child,
        )
        s3.BucketServerSideEncryptionConfiguration(
            name,
            bucket=bucket_id,
            rules=[
                {
                    "apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"},
                    "bucket_key_enabled": True,
                }
            ],
            opts=child,
        )
        if spec.versioning:
            s3.BucketVersioning(
                name, bucket=bucket_id, versioning_configuration={"status": "Enabled"}, opts=child
            )
        rules: list[dict[str, object]] = [
            {
                "id": "abort-incomplete-uploads",
                "status": "Enabled",
                "filter": {},
                "abort_incomplete_multipart_upload": {
                    "days_after_initiation": ABORT_INCOMPLETE_UPLOADS_DAYS
                },
            }
        ]
        if plan.elastic_pools:
            # One object per elastic launch, read by its nodes within minutes of it.
            rules.append(
                {
                    "id": "expire-elastic-launch-names",
                    "status": "Enabled",
                    "filter": {"prefix": LAUNCHES_PREFIX},
                    "expiration": {"days": LAUNCH_NAMES_DAYS},
                }
            )
        if spec.versioning:
            rules.append(
                {
                    "id": "expire-noncurrent-versions",
                    "status": "Enabled",
                    "filter": {},
                    "noncurrent_version_expiration": {
                        "noncurrent_days": spec.noncurrent_version_days
                    },
                }
            )
        s3.BucketLifecycleConfiguration(name, bucket=bucket_id, rules=rules, opts=child)  # type: ignore[arg-type]
        caller = get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        policy = pulumi.Output.all(caller.account_id, self.bucket.arn, caller.user_id).apply(
            lambda args: json.dumps(
                policies.bucket_policy(
                    plan, account=args[0], bucket_arn=args[1], deployer_user_id=args[2]
                ),
                sort_keys=True,
            )
        )
        # After the public access block: S3 checks a new policy against it (this one only
        # denies, so it is not public either way).
        s3.BucketPolicy(
            name,
            bucket=bucket_id,
            policy=policy,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[public_access]),
        )
        parameters.publish(plan, DeployParameter.BUCKET, bucket_id, role=Role.BUCKET, parent=self)
        self.register_outputs({"bucket": bucket_id})
