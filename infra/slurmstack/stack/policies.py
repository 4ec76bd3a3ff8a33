"""Every IAM document of the cluster, as pure functions (no Pulumi): the head node's role, one
role per pool, and the bucket policy. identity.py and bucket.py attach them; the tests lint them.

What each node may do, and nothing else:
- read the munge key (its one secret; the head node also the accounting database's password),
  the cluster's deploy parameters and the config store (``config/`` in the bucket): what the
  node agent reads at boot and on a config change;
- run the SSM agent (Session Manager, Run Command, the config-apply association);
- a pool node: mark an instance of its own pool's Auto Scaling group Unhealthy (its boot health
  check). Auto Scaling authorizes SetInstanceHealth against the group, with the group's tags
  as the only condition keys, and no key names the instance
  (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2autoscaling.html,
  SetInstanceHealth: resource autoScalingGroup*, keys autoscaling:ResourceTag/${TagKey},
  aws:ResourceTag/${TagKey}), so "its own pool" is as narrow as IAM can say: one role per pool;
- a node of an elastic pool: read its own tags (an elastic instance's node name);
- a pool node: write its own logs to the bucket, under logs/<pool>/<its instance ARN>/ and
  nowhere else: IAM's policy variable ec2:SourceInstanceARN names the calling instance (its
  role's credentials carry it), so one node cannot write or overwrite another's logs;
- the head node (its controller): find the cluster's instances, groups and Capacity Blocks
  (read-only); for any of the cluster's groups, mark an instance Unhealthy (so its group
  replaces it), keep alive and complete the drain lifecycle action of a terminating instance,
  and suspend or resume the group's replacement of Unhealthy instances (the circuit breaker);
  read the nodes' logs (to see that they arrived before an instance goes); with elastic
  pools (its power programs), launch their instances from the cluster's launch templates (EC2
  Fleet), name them (one object per launch under the bucket's launches/ prefix) and terminate
  them, and nothing else (power_statements);
- every node: pull container images from the account's ECR repositories in the cluster's
  Region (read-only), for its jobs (slurmstack.node.workload.ecr hands them the token).

No node writes anything else to the bucket: job users cannot reach the instance role at all
(only root reaches the metadata service, slurmstack.imds_firewall), so its data access would
serve only someone who is already root on a node. Jobs reach datasets and checkpoints through
/fsx (the data repository association) or with credentials of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slurmstack.contract import (
    CLUSTER_TAG,
    CONFIG_PREFIX,
    ELASTIC_TAG,
    IMAGE_PREFIX,
    LAUNCHES_PREFIX,
    LOGIN_POOL_TAG,
    LOGIN_ROLE,
    LOGS_PREFIX,
    POOL_TAG,
    ROLE_TAG,
    MountKind,
    log_prefix,
    login_host_key_secret_name,
    partition,
    resource_name,
)
from slurmstack.plan import ClusterPlan, LoginPoolPlan, MountPlan, PoolPlan, accounting_plan
from slurmstack.stack.common import Role, ssm_parameter_arn
from slurmstack.stack.data_policies import mountpoint_statements
from slurmstack.stack.monitoring_policy import (
    head_monitoring_statements,
    login_monitoring_statements,
    pool_monitoring_statements,
)

VERSION = "2012-10-17"

EC2_TRUST_POLICY: dict[str, Any] = {
    "Version": VERSION,
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}

# The SSM agent's calls, as AWS's managed policy AmazonSSMManagedInstanceCore (v2) grants them
# (https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonSSMManagedInstanceCore.html),
# less ssm:GetParameter(s) on every parameter of the account: nodes read their own cluster's
# parameters only (DeployParameters). Session Manager and Run Command offer no resource types
# to scope these to (ssmmessages and ec2messages have none); the service binds each call to the
# calling instance's own record. Reads stay as AWS grants them.
SSM_AGENT_READS = (
    "ssm:DescribeAssociation",
    "ssm:DescribeDocument",
    "ssm:GetDeployablePatchSnapshotForInstance",
    "ssm:GetDocument",
    "ssm:GetManifest",
    "ssm:ListAssociations",
    "ssm:ListInstanceAssociations",
    "ssm:PutConfigurePackageResult",  # AWS classes it as Read
    "ec2messages:GetEndpoint",
    "ec2messages:GetMessages",
)
SSM_AGENT_WRITES = (
    "ssm:PutComplianceItems",
    "ssm:PutInventory",
    "ssm:UpdateAssociationStatus",
    "ssm:UpdateInstanceAssociationStatus",
    "ssm:UpdateInstanceInformation",
    "ssmmessages:CreateControlChannel",
    "ssmmessages:CreateDataChannel",
    "ssmmessages:OpenControlChannel",
    "ssmmessages:OpenDataChannel",
    "ec2messages:AcknowledgeMessage",
    "ec2messages:DeleteMessage",
    "ec2messages:FailMessage",
    "ec2messages:SendReply",
)
# Bucket settings through which object versions could be removed, or this policy lifted:
# never a node's business, whatever else is attached to its role.
BUCKET_ADMIN_ACTIONS = (
    "s3:DeleteObjectVersion",
    "s3:PutBucketVersioning",
    "s3:PutLifecycleConfiguration",
    "s3:PutBucketPolicy",
    "s3:DeleteBucketPolicy",
)


def asg_arn(plan: ClusterPlan, account: str, group_name: str) -> str:
    """ARN of an Auto Scaling group by name (``*`` stands for the group id, unknown until the
    group exists; the name is unique in an account and region)."""
    return (
        f"arn:{partition(plan.region)}:autoscaling:{plan.region}:{account}:"
        f"autoScalingGroup:*:autoScalingGroupName/{group_name}"
    )


def ecr_repositories_arn(plan: ClusterPlan, account: str) -> str:
    """Every ECR repository of the account in the cluster's Region."""
    return f"arn:{partition(plan.region)}:ecr:{plan.region}:{account}:repository/*"


# What pulling an image takes (ECR User Guide, "Private repository policies": the actions a
# pull needs): read the manifest, the layers' locations, and whether layers exist. No push.
ECR_PULL_ACTIONS = (
    "ecr:BatchCheckLayerAvailability",
    "ecr:BatchGetImage",
    "ecr:GetDownloadUrlForLayer",
)


def _ecr_pull_statements(plan: ClusterPlan, account: str) -> list[dict[str, Any]]:
    return [
        {
            # GetAuthorizationToken names no resource: ECR authorizes it on "*" only (Service
            # Authorization Reference, Amazon ECR: no resource type for this action). The
            # token it returns carries the role's own permissions, so it reaches no more
            # than the repository statement below allows; a read (parliament, "Read").
            "Sid": "EcrToken",
            "Effect": "Allow",
            "Action": ["ecr:GetAuthorizationToken"],
            "Resource": ["*"],
        },
        {
            # The account's repositories in the cluster's Region, read-only.
            "Sid": "EcrPullFromTheAccount",
            "Effect": "Allow",
            "Action": list(ECR_PULL_ACTIONS),
            "Resource": [ecr_repositories_arn(plan, account)],
        },
    ]


def _ssm_agent_statements(plan: ClusterPlan) -> list[dict[str, Any]]:
    """What the SSM agent needs on an instance (nodes, and the image build's instance): its
    reads anywhere, its writes only in the cluster's region, so a copied credential registers
    no instance and opens no session anywhere else."""
    return [
        {
            "Sid": "SsmAgentReads",
            "Effect": "Allow",
            "Action": list(SSM_AGENT_READS),
            "Resource": ["*"],
        },
        {
            "Sid": "SsmAgentWrites",
            "Effect": "Allow",
            "Action": list(SSM_AGENT_WRITES),
            "Resource": ["*"],
            "Condition": _region_only(plan),
        },
    ]


def _region_only(plan: ClusterPlan) -> dict[str, Any]:
    return {"StringEquals": {"aws:RequestedRegion": plan.region}}


def _common_statements(
    plan: ClusterPlan, *, account: str, bucket_arn: str, secret_arn: str
) -> list[dict[str, Any]]:
    params = ssm_parameter_arn(plan.region, account, plan.parameter_prefix)
    return [
        {
            "Sid": "MungeKey",
            "Effect": "Allow",
            "Action": ["secretsmanager:GetSecretValue"],
            "Resource": [secret_arn],
        },
        {
            "Sid": "DeployParameters",
            "Effect": "Allow",
            "Action": ["ssm:GetParameter", "ssm:GetParameters"],
            "Resource": [f"{params}/*"],
        },
        {
            "Sid": "ConfigStoreRead",
            "Effect": "Allow",
            "Action": ["s3:GetObject"],
            "Resource": [f"{bucket_arn}/{CONFIG_PREFIX}*"],
        },
        *_ssm_agent_statements(plan),
        {
            # Defence in depth: the roles grant no write, and a policy attached later by
            # someone else still cannot let a node change what the head node applies.
            "Sid": "ConfigStoreIsWrittenByTheStackOnly",
            "Effect": "Deny",
            "Action": ["s3:PutObject", "s3:DeleteObject"],
            "Resource": [f"{bucket_arn}/{CONFIG_PREFIX}*"],
        },
        {
            "Sid": "VersionsAndBucketSettingsAreForAdministrators",
            "Effect": "Deny",
            "Action": list(BUCKET_ADMIN_ACTIONS),
            "Resource": [bucket_arn, f"{bucket_arn}/*"],
        },
        *_ecr_pull_statements(plan, account),
    ]


def efs_fallback_statements(
    plan: ClusterPlan, account: str, mounts: Sequence[MountPlan]
) -> list[dict[str, Any]]:
    """A node that mounts EFS: efs-utils resolves the file system's DNS name, which needs the
    VPC's DNS hostnames; in a VPC of your own without them it falls back to the mount target's
    IP address, found with these two read-only calls (efs-utils README, "Using botocore to
    retrieve mount target ip address when dns name cannot be resolved": allow
    elasticfilesystem:DescribeMountTargets and ec2:DescribeAvailabilityZones). botocore is in
    the image (python3-boto3); the fallback is on by default in efs-utils.conf."""
    efs = [m for m in mounts if m.kind is MountKind.EFS]
    if not efs:
        return []
    file_systems = f"arn:{partition(plan.region)}:elasticfilesystem:{plan.region}:{account}"
    statements: list[dict[str, Any]] = []
    if any(not m.existing for m in efs):
        statements.append(
            {
                "Sid": "EfsMountTargetFallback",
                "Effect": "Allow",
                "Action": ["elasticfilesystem:DescribeMountTargets"],
                "Resource": [f"{file_systems}:file-system/*"],
                "Condition": {"StringEquals": {f"aws:ResourceTag/{CLUSTER_TAG}": plan.name}},
            }
        )
    yours = sorted({m.file_system_id for m in efs if m.file_system_id is not None})
    if yours:
        # Yours carry no cluster tag: named one by one.
        statements.append(
            {
                "Sid": "EfsMountTargetFallbackYours",
                "Effect": "Allow",
                "Action": ["elasticfilesystem:DescribeMountTargets"],
                "Resource": [f"{file_systems}:file-system/{fid}" for fid in yours],
            }
        )
    return [
        *statements,
        {
            # Read-only, and takes no resource.
            "Sid": "EfsZoneOfMountTarget",
            "Effect": "Allow",
            "Action": ["ec2:DescribeAvailabilityZones"],
            "Resource": ["*"],
        },
    ]


def _ec2_arn(plan: ClusterPlan, account: str, resource: str) -> str:
    # An image's and a snapshot's ARNs name no account (Service Authorization Reference,
    # "Amazon EC2": image, snapshot).
    owner = "" if resource.startswith(("image/", "snapshot/")) else account
    return f"arn:{partition(plan.region)}:ec2:{plan.region}:{owner}:{resource}"


# What a launch from a launch template touches besides the template and the instance (the EC2
# actions' resource types in AWS's Service Authorization Reference, "Amazon EC2": RunInstances,
# CreateFleet).
LAUNCH_RESOURCES = (
    "subnet/*",
    "security-group/*",
    "network-interface/*",
    "volume/*",
    "image/*",
    "placement-group/*",
)
FLEET_SERVICE = "ec2fleet.amazonaws.com"


def power_statements(plan: ClusterPlan, account: str, bucket_arn: str) -> list[dict[str, Any]]:
    """The head's power programs (slurmstack.node.power), when a pool is elastic: launch
    instances with an EC2 Fleet from the cluster's own launch templates, tagged as the
    cluster's at launch; name them in one object per launch (the bucket's launches/ prefix);
    terminate only the elastic instances of the cluster. slurmctld runs these programs as
    SlurmUser, which the head's metadata firewall lets through for this
    (slurmstack.imds_firewall)."""
    pools = plan.elastic_pools
    if not pools:
        return []
    cluster_tag = f"aws:ResourceTag/{CLUSTER_TAG}"
    ec2_cluster_tag = f"ec2:ResourceTag/{CLUSTER_TAG}"
    launch = ["ec2:CreateFleet", "ec2:RunInstances"]
    reservations = sorted(
        {p.capacity.reservation_id for p in pools if p.capacity.reservation_id is not None}
    )
    iam = f"arn:{partition(plan.region)}:iam::{account}"
    statements: list[dict[str, Any]] = [
        {
            # Only from a launch template of this cluster (the stack tags them so) ...
            "Sid": "LaunchFromClusterTemplates",
            "Effect": "Allow",
            "Action": launch,
            "Resource": [_ec2_arn(plan, account, "launch-template/*")],
            "Condition": {"StringEquals": {cluster_tag: plan.name}},
        },
        {
            # ... instances (and the fleet request) tagged as the cluster's from the start.
            "Sid": "LaunchClusterTaggedInstances",
            "Effect": "Allow",
            "Action": launch,
            "Resource": [
                _ec2_arn(plan, account, "instance/*"),
                _ec2_arn(plan, account, "fleet/*"),
            ],
            "Condition": {"StringEquals": {f"aws:RequestTag/{CLUSTER_TAG}": plan.name}},
        },
        {
            # The network, volumes and image a launch uses, only through a launch template
            # (which the statement above holds to the cluster's; CreateFleet always takes one).
            "Sid": "LaunchThroughATemplate",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances"],
            "Resource": [_ec2_arn(plan, account, r) for r in LAUNCH_RESOURCES]
            + [_ec2_arn(plan, account, f"capacity-reservation/{r}") for r in reservations],
            "Condition": {
                "ArnLike": {"ec2:LaunchTemplate": _ec2_arn(plan, account, "launch-template/*")}
            },
        },
        {
            "Sid": "FleetResourcesInTheClustersRegion",
            "Effect": "Allow",
            "Action": ["ec2:CreateFleet"],
            "Resource": [_ec2_arn(plan, account, r) for r in LAUNCH_RESOURCES],
            "Condition": {"StringEquals": {"aws:RequestedRegion": plan.region}},
        },
        {
            # Tags only as part of a launch ...
            "Sid": "TagAtLaunch",
            "Effect": "Allow",
            "Action": ["ec2:CreateTags"],
            "Resource": [
                _ec2_arn(plan, account, f"{kind}/*")
                for kind in ("instance", "volume", "network-interface", "fleet")
            ],
            "Condition": {"StringEquals": {"ec2:CreateAction": ["CreateFleet", "RunInstances"]}},
        },
        {
            # ... and the names of each launch's instances, one object per launch, below a
            # prefix of its own (not the config store's, which only the stack writes).
            "Sid": "NameElasticLaunches",
            "Effect": "Allow",
            "Action": ["s3:PutObject"],
            "Resource": [f"{bucket_arn}/{LAUNCHES_PREFIX}*"],
        },
        {
            # The elastic instances of this cluster, and no other instance (the always-on
            # nodes are their groups' to terminate).
            "Sid": "TerminateElasticInstances",
            "Effect": "Allow",
            "Action": ["ec2:TerminateInstances"],
            "Resource": [_ec2_arn(plan, account, "instance/*")],
            "Condition": {
                "StringEquals": {ec2_cluster_tag: plan.name},
                "StringLike": {f"ec2:ResourceTag/{ELASTIC_TAG}": "*"},
            },
        },
        {
            # The elastic pools' launch templates give their instances these roles.
            "Sid": "PassElasticPoolRoles",
            "Effect": "Allow",
            "Action": ["iam:PassRole"],
            "Resource": [
                f"{iam}:role/{resource_name(plan.name, Role.POOL, p.name)}" for p in pools
            ],
            "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        },
        {
            # EC2 Fleet works through its service-linked role (EC2 User Guide, "Service-linked
            # role for EC2 Fleet"), made on first use in an account.
            "Sid": "Ec2FleetServiceLinkedRole",
            "Effect": "Allow",
            "Action": ["iam:CreateServiceLinkedRole"],
            "Resource": [f"{iam}:role/aws-service-role/{FLEET_SERVICE}/AWSServiceRoleForEC2Fleet"],
            "Condition": {"StringEquals": {"iam:AWSServiceName": FLEET_SERVICE}},
        },
    ]
    return statements


def accounting_secret_arn(plan: ClusterPlan, account: str, created_arn: str | None) -> str | None:
    """The secret holding the accounting database's password: the one the stack created, or an
    external database's, named by the definition (by name: Secrets Manager appends six
    characters to a secret's name in its ARN). None without accounting."""
    accounting = accounting_plan(plan)
    if accounting is None:
        return None
    if accounting.database.stack_creates_secret:
        return created_arn
    given = accounting.database.password_secret
    if given.startswith("arn:"):
        return given
    return (
        f"arn:{partition(plan.region)}:secretsmanager:{plan.region}:{account}:secret:{given}-??????"
    )


def prune_statements(plan: ClusterPlan, account: str) -> list[dict[str, Any]]:
    """The head's prune-images (slurmstack.node.controller.images_prune): deregister the cluster's AMIs
    and delete their snapshots, both only when tagged as the cluster's (the stack tags an AMI
    and its root snapshot so); find them, the launch templates' versions and the snapshots
    (EC2's Describe calls take no resource)."""
    tagged = {"StringEquals": {f"aws:ResourceTag/{CLUSTER_TAG}": plan.name}}
    return [
        {
            "Sid": "PruneClusterImages",
            "Effect": "Allow",
            "Action": ["ec2:DeregisterImage", "ec2:DeleteSnapshot"],
            "Resource": [_ec2_arn(plan, account, "image/*"), _ec2_arn(plan, account, "snapshot/*")],
            "Condition": tagged,
        },
        {
            "Sid": "FindClusterImages",
            "Effect": "Allow",
            "Action": [
                "ec2:DescribeImages",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribeLaunchTemplateVersions",
            ],
            "Resource": ["*"],
        },
    ]


def head_policy(
    plan: ClusterPlan,
    *,
    account: str,
    bucket_arn: str,
    secret_arn: str,
    accounting_secret: str | None = None,
) -> dict[str, Any]:
    """The head node role's inline policy. ``accounting_secret``: the ARN of the accounting
    database's password secret (accounting_secret_arn), which only the head node reads."""
    statements = _common_statements(
        plan, account=account, bucket_arn=bucket_arn, secret_arn=secret_arn
    )
    if accounting_secret is not None:
        statements.append(
            {
                # slurmdbd's database password, written into slurmdbd.conf by the head's agent.
                "Sid": "AccountingDatabasePassword",
                "Effect": "Allow",
                "Action": ["secretsmanager:GetSecretValue"],
                "Resource": [accounting_secret],
            }
        )
    statements += [
        {
            # The controller's repairs: replace a node (its group terminates and relaunches
            # it), hold a terminating instance in the drain hook and let it go, stop and resume
            # a group's replacements (the breaker). Any of this cluster's groups (name
            # pattern), and only groups tagged as this cluster's (another cluster may be named
            # "<this>-pool-x").
            "Sid": "RepairClusterNodes",
            "Effect": "Allow",
            "Action": list(HEAD_GROUP_ACTIONS),
            "Resource": [asg_arn(plan, account, resource_name(plan.name, Role.POOL) + "-*")],
            "Condition": {"StringEquals": {f"aws:ResourceTag/{CLUSTER_TAG}": plan.name}},
        },
        {
            # Read-only, and these Describe calls take no resource: the controller filters by
            # the cluster tag and its groups' names itself (DescribeInstanceTopology: where its
            # nodes sit in EC2's network, for Slurm's topology; docs/topology.md).
            "Sid": "FindClusterInstances",
            "Effect": "Allow",
            "Action": [
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceTopology",
                "ec2:DescribeCapacityReservations",
                "autoscaling:DescribeAutoScalingGroups",
            ],
            "Resource": ["*"],
        },
        *power_statements(plan, account, bucket_arn),
        *efs_fallback_statements(plan, account, plan.mounts),
        *mountpoint_statements(plan, bucket_arn),
        *prune_statements(plan, account),
        {
            # Whether a terminating node's logs arrived (HeadObject).
            "Sid": "ReadNodeLogs",
            "Effect": "Allow",
            "Action": ["s3:GetObject"],
            "Resource": [f"{bucket_arn}/{LOGS_PREFIX}*"],
        },
        *head_monitoring_statements(plan, account),
    ]
    if plan.spec.directory is not None and plan.spec.directory.bind_password_secret:
        statements.append(_directory_bind_statement(plan, account))
    return {"Version": VERSION, "Statement": statements}


def pool_policy(
    plan: ClusterPlan, pool: PoolPlan, *, account: str, bucket_arn: str, secret_arn: str
) -> dict[str, Any]:
    """The inline policy of the role of ``pool``'s nodes."""
    statements = _common_statements(
        plan, account=account, bucket_arn=bucket_arn, secret_arn=secret_arn
    )
    statements.append(
        {
            # Logs outlive instances: a node writes its own logs, under its own instance's
            # prefix only (the policy variable is the calling instance's ARN).
            "Sid": "ShipOwnLogs",
            "Effect": "Allow",
            "Action": ["s3:PutObject"],
            "Resource": [f"{bucket_arn}/{own_logs_prefix(pool)}*"],
        }
    )
    statements.append(
        {
            # The boot health check: a node that fails it is replaced by its group. Only
            # this pool's group (by name, and by its cluster and pool tags).
            "Sid": "MarkOwnPoolUnhealthy",
            "Effect": "Allow",
            "Action": ["autoscaling:SetInstanceHealth"],
            "Resource": [asg_arn(plan, account, resource_name(plan.name, Role.POOL, pool.name))],
            "Condition": {
                "StringEquals": {
                    f"aws:ResourceTag/{CLUSTER_TAG}": plan.name,
                    f"aws:ResourceTag/{POOL_TAG}": pool.name,
                }
            },
        }
    )
    statements += [
        {
            # Joining (slurmstack.node.boot.join_hook): the node's instance waits in its group's
            # launch hook until its node is in Slurm, then completes the action (CONTINUE, or
            # ABANDON after a failed boot); the same group, by name and tags, as above.
            "Sid": "CompleteOwnLaunch",
            "Effect": "Allow",
            "Action": [
                "autoscaling:CompleteLifecycleAction",
                "autoscaling:RecordLifecycleActionHeartbeat",
            ],
            "Resource": [asg_arn(plan, account, resource_name(plan.name, Role.POOL, pool.name))],
            "Condition": {
                "StringEquals": {
                    f"aws:ResourceTag/{CLUSTER_TAG}": plan.name,
                    f"aws:ResourceTag/{POOL_TAG}": pool.name,
                }
            },
        },
        {
            # Whether the instance waits in that hook. Read-only; Auto Scaling's Describe calls
            # take no resource (Service Authorization Reference, "Amazon EC2 Auto Scaling").
            "Sid": "FindOwnLaunch",
            "Effect": "Allow",
            "Action": ["autoscaling:DescribeAutoScalingInstances"],
            "Resource": ["*"],
        },
    ]
    statements += efs_fallback_statements(plan, account, pool.mounts)
    statements += mountpoint_statements(plan, bucket_arn)
    if plan.spec.directory is not None and plan.spec.directory.bind_password_secret:
        statements.append(_directory_bind_statement(plan, account))
    statements += pool_monitoring_statements(plan, pool, account)
    if pool.elastic:
        statements += [
            {
                # An elastic instance reads its node name in its launch's object at boot
                # (slurmstack.node.boot.elastic) ...
                "Sid": "ReadElasticLaunchNames",
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": [f"{bucket_arn}/{LAUNCHES_PREFIX}*"],
            },
            {
                # ... found by its tags: in its instance metadata, or, from a launch template
                # that does not put them there, from EC2. Read-only; EC2's Describe calls take
                # no resource.
                "Sid": "ReadOwnTags",
                "Effect": "Allow",
                "Action": ["ec2:DescribeTags"],
                "Resource": ["*"],
            },
        ]
    return {"Version": VERSION, "Statement": statements}


def login_policy(
    plan: ClusterPlan, pool: LoginPoolPlan, *, account: str, bucket_arn: str, secret_arn: str
) -> dict[str, Any]:
    """The inline policy of a login pool's nodes: what every node reads (the munge key Slurm's
    clients need, the parameters, the config store), the pool's host key, and marking its own
    group's instances Unhealthy, and its own logs (its agent's events, its authentication log).
    No database password, no EC2 launch."""
    statements = _common_statements(
        plan, account=account, bucket_arn=bucket_arn, secret_arn=secret_arn
    )
    host_key = (
        f"arn:{partition(plan.region)}:secretsmanager:{plan.region}:{account}:secret:"
        f"{login_host_key_secret_name(plan.name, pool.name)}-*"
    )
    statements += [
        {
            # The pool's one SSH host key: the first node stores it, the others read it.
            "Sid": "LoginPoolHostKey",
            "Effect": "Allow",
            "Action": ["secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"],
            "Resource": [host_key],
        },
        {
            "Sid": "MarkOwnLoginPoolUnhealthy",
            "Effect": "Allow",
            "Action": ["autoscaling:SetInstanceHealth"],
            "Resource": [asg_arn(plan, account, resource_name(plan.name, LOGIN_ROLE, pool.name))],
            "Condition": {
                "StringEquals": {
                    f"aws:ResourceTag/{CLUSTER_TAG}": plan.name,
                    f"aws:ResourceTag/{LOGIN_POOL_TAG}": pool.name,
                }
            },
        },
    ]
    statements += efs_fallback_statements(plan, account, plan.mounts)
    statements += mountpoint_statements(plan, bucket_arn)
    if plan.spec.directory is not None and plan.spec.directory.bind_password_secret:
        statements.append(_directory_bind_statement(plan, account))
    statements += login_monitoring_statements(plan, account)
    return {"Version": VERSION, "Statement": statements}


def _directory_bind_statement(plan: ClusterPlan, account: str) -> dict[str, Any]:
    """SSSD's bind password (directory.bind_password_secret), read by every node's agent."""
    secret = plan.spec.directory.bind_password_secret if plan.spec.directory else ""
    assert secret
    arn = (
        secret
        if secret.startswith("arn:")
        else f"arn:{partition(plan.region)}:secretsmanager:{plan.region}:{account}:secret:{secret}-*"
    )
    return {
        "Sid": "DirectoryBindPassword",
        "Effect": "Allow",
        "Action": ["secretsmanager:GetSecretValue"],
        "Resource": [arn],
    }


# The controller's calls on a group (each scoped to the cluster's groups by name and tag).
HEAD_GROUP_ACTIONS = (
    "autoscaling:SetInstanceHealth",
    "autoscaling:CompleteLifecycleAction",
    "autoscaling:RecordLifecycleActionHeartbeat",
    "autoscaling:SuspendProcesses",
    "autoscaling:ResumeProcesses",
)
# IAM's policy variable for the ARN of the instance whose role credentials sign a request.
SOURCE_INSTANCE_ARN = "${ec2:SourceInstanceARN}"


def own_logs_prefix(pool: PoolPlan) -> str:
    """The bucket prefix a node of ``pool`` may write: its own instance's (contract.log_prefix,
    the ARN left to IAM)."""
    return log_prefix(pool.name, SOURCE_INSTANCE_ARN)


def image_component_arn(plan: ClusterPlan, account: str) -> str:
    """Every Image Builder component of the cluster (their names start ``{cluster}-image-``;
    Image Builder's ARNs hold the name in lowercase, as cluster names are)."""
    prefix = resource_name(plan.name, Role.IMAGE)
    return f"arn:{partition(plan.region)}:imagebuilder:{plan.region}:{account}:component/{prefix}-*"


# Where each image's build logs go (slurmstack.stack.image.build_log_group).
IMAGE_LOG_GROUP_PREFIX = "/aws/imagebuilder/"


def image_build_policy(plan: ClusterPlan, *, account: str, bucket_arn: str) -> dict[str, Any]:
    """The inline policy of the instances Image Builder builds and tests the node images on:
    what AWSTOE and the SSM agent on them need (Image Builder drives the build through Run
    Command), the cluster's own components and build bundles, and nothing of the cluster's
    secret, parameters or configuration (EC2 Image Builder User Guide, "Image Builder
    prerequisites": the instance profile needs the SSM agent's permissions, and
    imagebuilder:GetComponent plus s3:GetObject for what the components download)."""
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "ClusterComponents",
                "Effect": "Allow",
                "Action": ["imagebuilder:GetComponent"],
                "Resource": [image_component_arn(plan, account)],
            },
            {
                "Sid": "BuildBundles",
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": [f"{bucket_arn}/{IMAGE_PREFIX}*"],
            },
            *_ssm_agent_statements(plan),
            {
                # Image Builder streams the build's logs to CloudWatch Logs from the build
                # instance, with its role: into the cluster's images' groups, which the stack
                # made (so no CreateLogGroup).
                "Sid": "BuildLogs",
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": [
                    f"arn:{partition(plan.region)}:logs:{plan.region}:{account}:log-group:"
                    f"{IMAGE_LOG_GROUP_PREFIX}{resource_name(plan.name, Role.IMAGE)}-*"
                ],
            },
            {
                "Sid": "BucketIsWrittenByTheStackOnly",
                "Effect": "Deny",
                "Action": ["s3:PutObject", "s3:DeleteObject", *BUCKET_ADMIN_ACTIONS],
                "Resource": [bucket_arn, f"{bucket_arn}/*"],
            },
        ],
    }


def administrator_user_ids(account: str, deployer_user_id: str) -> list[str]:
    """``aws:userid`` patterns of the principals that may delete object versions: the account
    root (its userid is the account id) and the principal that deploys the stack, any session
    of it. A role session's userid is ``<role id>:<session name>``, an IAM user's its unique
    id; a federated user's is ``<account>:<name>``, so deploying as one admits all of the
    account's federated users. Anyone allowed to change the bucket policy can lift the
    statement; nobody is locked out of that."""
    deployer = deployer_user_id
    if ":" in deployer:
        deployer = deployer.split(":", 1)[0] + ":*"
    return sorted({account, deployer})


def version_deleters(plan: ClusterPlan, account: str, deployer_user_id: str) -> dict[str, Any]:
    """Who may delete object versions, as the Deny's condition: it is denied to whoever is none
    of them (a statement's conditions are ANDed). The account root and the latest deployer by
    ``aws:userid``; the definition's storage.bucket.administrators by ``aws:PrincipalArn`` (a
    role's ARN, whatever the session), so another administrator or a CI role can empty the
    bucket whoever deployed last."""
    condition: dict[str, Any] = {
        "StringNotLike": {"aws:userid": administrator_user_ids(account, deployer_user_id)}
    }
    administrators = plan.spec.storage.bucket.administrators
    if administrators:
        condition["ArnNotLike"] = {"aws:PrincipalArn": sorted(administrators)}
    return condition


def bucket_policy(
    plan: ClusterPlan, *, account: str, bucket_arn: str, deployer_user_id: str
) -> dict[str, Any]:
    """The cluster bucket's policy: denials only (same-account access is granted by identity
    policies), independent of the pools, so adding one never touches the bucket."""
    everything = [bucket_arn, f"{bucket_arn}/*"]
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "RequireTls",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": everything,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
            {
                # The nodes of this cluster (their roles carry its tags), whatever their
                # identity policies say.
                "Sid": "ConfigStoreIsWrittenByTheStackOnly",
                "Effect": "Deny",
                "Principal": "*",
                "Action": ["s3:PutObject", "s3:DeleteObject"],
                "Resource": [f"{bucket_arn}/{CONFIG_PREFIX}*"],
                "Condition": {
                    "StringEquals": {
                        f"aws:PrincipalTag/{CLUSTER_TAG}": plan.name,
                        f"aws:PrincipalTag/{ROLE_TAG}": Role.IDENTITY.value,
                    }
                },
            },
            {
                # Old checkpoint versions are the undo of an overwrite: only an administrator
                # removes them (S3 lifecycle expiry is not subject to bucket policies).
                "Sid": "OnlyAdministratorsDeleteVersions",
                "Effect": "Deny",
                "Principal": "*",
                "Action": ["s3:DeleteObjectVersion"],
                "Resource": [f"{bucket_arn}/*"],
                "Condition": version_deleters(plan, account, deployer_user_id),
            },
        ],
    }
