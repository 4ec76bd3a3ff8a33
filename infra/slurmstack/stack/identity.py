"""Instance roles and profiles for the head node and the workers, each with only what it
needs: Session Manager, the cluster's munge secret, its parameters, its bucket, and marking
instances of the cluster's own Auto Scaling groups unhealthy."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_aws.iam as iam
from pulumi_aws import get_caller_identity_output

from slurmstack.plan import ClusterPlan
from slurmstack.stack.common import Role, partition, resource_name, ssm_parameter_arn, tags

EC2_TRUST_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "ec2.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
)

# Prefix of every pool's Auto Scaling group name (see worker_pool.asg_name).
ASG_NAME_PREFIX_ROLE = "pool"
CONFIG_PREFIX = "config/"


def asg_arn_pattern(plan: ClusterPlan, account: str) -> str:
    prefix = resource_name(plan.name, ASG_NAME_PREFIX_ROLE)
    return (
        f"arn:{partition(plan.region)}:autoscaling:{plan.region}:{account}:"
        f"autoScalingGroup:*:autoScalingGroupName/{prefix}-*"
    )


def node_policy(
    plan: ClusterPlan, *, account: str, bucket_arn: str, secret_arn: str, head: bool
) -> dict[str, Any]:
    """The inline policy of a node role (pure: tested without Pulumi).

    Read access covers the whole bucket (datasets, checkpoints, the config store). Jobs write
    checkpoints from every node, so objects may be written anywhere except under the config
    store prefix, which only the stack writes (a compromised node cannot change what the head
    node applies).
    """
    params = ssm_parameter_arn(plan.region, account, plan.parameter_prefix)
    statements: list[dict[str, Any]] = [
        {
            "Sid": "MungeKey",
            "Effect": "Allow",
            "Action": ["secretsmanager:GetSecretValue"],
            "Resource": [secret_arn],
        },
        {
            "Sid": "DeployParameters",
            "Effect": "Allow",
            "Action": ["ssm:GetParameter", "ssm:GetParameters", "ssm:GetParametersByPath"],
            "Resource": [params, f"{params}/*"],
        },
        {
            "Sid": "BucketList",
            "Effect": "Allow",
            "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
            "Resource": [bucket_arn],
        },
        {
            "Sid": "BucketObjects",
            "Effect": "Allow",
            "Action": [
                "s3:GetObject",
                "s3:PutObject",
                "s3:DeleteObject",
                "s3:AbortMultipartUpload",
                "s3:ListMultipartUploadParts",
            ],
            "Resource": [f"{bucket_arn}/*"],
        },
        {
            "Sid": "ConfigStoreIsWrittenByTheStackOnly",
            "Effect": "Deny",
            "Action": ["s3:PutObject", "s3:DeleteObject"],
            "Resource": [f"{bucket_arn}/{CONFIG_PREFIX}*"],
        },
        {
            # A node that fails its boot health check marks itself unhealthy so its group
            # replaces it; the head node may mark nodes slurmctld found dead.
            "Sid": "MarkUnhealthy",
            "Effect": "Allow",
            "Action": ["autoscaling:SetInstanceHealth"],
            "Resource": [asg_arn_pattern(plan, account)],
        },
    ]
    if head:
        statements.append(
            {
                # Read-only, and EC2 offers no resource-level scoping for Describe calls:
                # the head maps Slurm node addresses to instance ids for health marking.
                "Sid": "DescribeNodes",
                "Effect": "Allow",
                "Action": ["ec2:DescribeInstances", "autoscaling:DescribeAutoScalingInstances"],
                "Resource": ["*"],
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}


def _policy_json(plan: ClusterPlan, *, head: bool) -> Callable[[list[Any]], str]:
    def render(args: list[Any]) -> str:
        account, bucket_arn, secret_arn = (str(a) for a in args)
        policy = node_policy(
            plan, account=account, bucket_arn=bucket_arn, secret_arn=secret_arn, head=head
        )
        return json.dumps(policy, sort_keys=True)

    return render


class Identity(pulumi.ComponentResource):
    """Two roles (head, worker), their inline policies and instance profiles."""

    head_profile: iam.InstanceProfile
    worker_profile: iam.InstanceProfile
    head_role: iam.Role
    worker_role: iam.Role

    def __init__(
        self,
        plan: ClusterPlan,
        *,
        bucket_arn: pulumi.Input[str],
        secret_arn: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            "slurmstack:stack:Identity", resource_name(plan.name, Role.IDENTITY), None, opts
        )
        child = pulumi.ResourceOptions(parent=self)
        account = get_caller_identity_output(
            opts=pulumi.InvokeOutputOptions(parent=self)
        ).account_id
        ssm_core = f"arn:{partition(plan.region)}:iam::aws:policy/AmazonSSMManagedInstanceCore"
        made: dict[str, tuple[iam.Role, iam.InstanceProfile]] = {}
        for kind in ("head", "worker"):
            name = resource_name(plan.name, kind)
            role = iam.Role(
                name,
                name=name,
                assume_role_policy=EC2_TRUST_POLICY,
                description=f"slurmstack {plan.name}: {kind} node instance role",
                tags=tags(plan, Role.IDENTITY, name),
                opts=child,
            )
            # Session Manager is the shell (no SSH by default) and runs the config-apply command.
            iam.RolePolicyAttachment(f"{name}-ssm", role=role.name, policy_arn=ssm_core, opts=child)
            document = pulumi.Output.all(account, bucket_arn, secret_arn).apply(
                _policy_json(plan, head=kind == "head")
            )
            iam.RolePolicy(name, name=name, role=role.id, policy=document, opts=child)
            profile = iam.InstanceProfile(
                name, name=name, role=role.name, tags=tags(plan, Role.IDENTITY, name), opts=child
            )
            made[kind] = (role, profile)
        self.head_role, self.head_profile = made["head"]
        self.worker_role, self.worker_profile = made["worker"]
        self.register_outputs(
            {"head_profile": self.head_profile.arn, "worker_profile": self.worker_profile.arn}
        )
