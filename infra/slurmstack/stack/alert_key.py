"""The alert topic's own KMS key. The topic is encrypted at rest like every store of the cluster,
and CloudWatch alarms (the head's recovery alarms, slurmstack.stack.head_recovery) publish to it:
an AWS service publishing to an encrypted topic must be allowed to use the topic's key, which the
AWS managed key for SNS (alias/aws/sns) cannot allow, since its key policy cannot be changed
(Amazon SNS Developer Guide, "Configure AWS KMS permissions for AWS services"). So the topic has
a customer managed key whose policy lets, besides the account's own administrators: CloudWatch,
for alarms of this account only; and the head's role, through SNS only (the alert relay's
publishing needs the key too)."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws.iam as iam
import pulumi_aws.kms as kms
from pulumi_aws import get_caller_identity_output

from slurmstack.contract import alert_topic_name, partition
from slurmstack.plan import ClusterPlan
from slurmstack.stack.common import Role, tags

# What SNS asks of a publisher's key: a data key per message, and reading it back.
PUBLISH_KEY_ACTIONS = ("kms:GenerateDataKey*", "kms:Decrypt")
# KMS waits this long before it deletes a key the stack deleted (7 to 30 days); the shortest
# keeps a removed cluster from paying for a month, and a mistaken delete can still be cancelled.
KEY_DELETION_DAYS = 7


def alert_key_policy(plan: ClusterPlan, account: str, head_role_arn: str | None) -> dict[str, Any]:
    """The key policy: pure, so the tests read the same document the stack sends."""
    root = f"arn:{partition(plan.region)}:iam::{account}:root"
    statements: list[dict[str, Any]] = [
        {
            # The account administers the key through IAM (KMS's default key policy): without
            # it nobody could change or delete the key.
            "Sid": "AccountAdministers",
            "Effect": "Allow",
            "Principal": {"AWS": root},
            "Action": "kms:*",
            "Resource": "*",
        },
        {
            "Sid": "CloudWatchAlarmsPublish",
            "Effect": "Allow",
            "Principal": {"Service": "cloudwatch.amazonaws.com"},
            "Action": list(PUBLISH_KEY_ACTIONS),
            "Resource": "*",
            # Alarms of this account only (the confused deputy).
            "Condition": {"StringEquals": {"aws:SourceAccount": account}},
        },
    ]
    if head_role_arn is not None:
        statements.append(
            {
                "Sid": "AlertRelayPublishes",
                "Effect": "Allow",
                "Principal": {"AWS": head_role_arn},
                "Action": list(PUBLISH_KEY_ACTIONS),
                "Resource": "*",
                "Condition": {
                    "StringEquals": {"kms:ViaService": f"sns.{plan.region}.amazonaws.com"}
                },
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}


def alert_topic_key(
    plan: ClusterPlan, head_role: iam.Role | None, *, parent: pulumi.Resource
) -> kms.Key:
    name = f"{alert_topic_name(plan.name)}-key"
    account = get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=parent)).account_id
    role_arn: pulumi.Input[str | None] = head_role.arn if head_role is not None else None
    policy = pulumi.Output.all(account, role_arn).apply(
        lambda values: json.dumps(alert_key_policy(plan, values[0], values[1]))
    )
    key = kms.Key(
        name,
        description=f"slurmstack {plan.name}: the alert topic's key (CloudWatch alarms publish)",
        enable_key_rotation=True,
        deletion_window_in_days=KEY_DELETION_DAYS,
        policy=policy,
        tags=tags(plan, Role.MONITORING, name),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    kms.Alias(
        name,
        name=f"alias/slurmstack/{name}",
        target_key_id=key.key_id,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return key
