"""The IAM documents the program registers (every example, under the offline engine): each
node role's inline policy, the roles' trust policy and the bucket policy. Scoped to the
cluster's own resources, linted with parliament (ol-parliament, offline), and asked concrete
questions through a stand-in evaluator (iam_eval.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import parliament
import pytest
import yaml

from slurmstack.contract import CLUSTER_TAG, POOL_TAG, ROLE_TAG
from slurmstack.offline.standins import ACCOUNT_ID, call_stand_in
from slurmstack.plan import ClusterPlan
from slurmstack.stack import policies
from stack.iam_eval import decide
from support.stack import EXAMPLE_IDS, T_ASG, T_BUCKET, T_INSTANCE, T_LT, example, plan_of, run_ok

pytestmark = pytest.mark.stack

T_ROLE = "aws:iam/role:Role"
T_ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
T_PROFILE = "aws:iam/instanceProfile:InstanceProfile"
T_BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
T_SECRET = "aws:secretsmanager/secret:Secret"
T_CALLER = "aws:index/getCallerIdentity:getCallerIdentity"

# Access levels AWS gives each action in its service authorization reference (shipped with
# parliament). Everything but List and Read changes something.
READ_LEVELS = {"List", "Read"}

# Every linter finding the documents may have, each with the reason it stands. Anything else,
# at any severity, fails the test.
ACCEPTED_FINDINGS = {
    (
        "node",
        "CREDENTIALS_EXPOSURE",
        "{'actions': ['ecr:getauthorizationtoken'], 'filepath': None}",
    ): (
        "MEDIUM (community auditor): the ECR token is the point, job users pull images with it; "
        "it carries only the role's own ECR permissions, read-only on the account's "
        "repositories in the cluster's Region"
    ),
    ("trust", "MALFORMED", "Statement contains neither Resource nor NotResource"): (
        "a role's trust policy has no Resource by definition (it is evaluated against the "
        "role itself); parliament reads it as an identity policy"
    ),
    ("node", "RESOURCE_STAR", "['ssm:DescribeDocument', 'ssm:GetDocument']"): (
        "LOW: the SSM agent reads documents as AWS's managed instance policy lets it (any "
        "document: AWS's own, the account's); reads only"
    ),
    (
        "node",
        "RESOURCE_STAR",
        "['ssm:UpdateAssociationStatus', 'ssm:UpdateInstanceAssociationStatus']",
    ): (
        "LOW: the agent reports the status of its own instance's associations; granted on * "
        "as AWS's managed policy does, held to the cluster's region by a condition"
    ),
}
# Findings the head's power programs bring (elastic pools), by issue.
ACCEPTED_POWER_FINDINGS = {
    "PERMISSIONS_MANAGEMENT_ACTIONS": (
        "iam:PassRole of the elastic pools' own roles (to EC2 only) and EC2 Fleet's "
        "service-linked role (for that service only): a launch from a pool's template needs both"
    ),
    "PRIVILEGE_ESCALATION": (
        "RunInstances with PassRole is how an instance gets its role: the head may pass only "
        "its elastic pools' roles, from the cluster's launch templates"
    ),
    "RESOURCE_MISMATCH": (
        "a launch's statements are split by condition (template, tags at launch, Region), so "
        "each lists only part of the resource types CreateFleet and RunInstances touch"
    ),
}
POWER_ACTIONS = {"ec2:createfleet", "ec2:runinstances", "iam:passrole", "ec2:CreateFleet",
                 "ec2:RunInstances", "iam:createservicelinkedrole"}  # fmt: skip


def accepted_power_finding(issue: str, detail: str) -> bool:
    if issue not in ACCEPTED_POWER_FINDINGS:
        return False
    return all(a.strip(" '\"") in POWER_ACTIONS for a in re.findall(r"'action': ('[^']*')", detail))


@cache
def access_levels() -> dict[str, str]:
    data = json.loads(resources.files("parliament").joinpath("iam_definition.json").read_text())
    return {
        f"{service['prefix']}:{action['privilege']}".lower(): action["access_level"]
        for service in data
        for action in service["privileges"]
    }


@dataclass(frozen=True)
class ClusterIam:
    stem: str
    plan: ClusterPlan
    role_policies: dict[str, dict[str, Any]]  # role name -> inline policy
    role_tags: dict[str, dict[str, str]]
    trust_policies: dict[str, dict[str, Any]]
    bucket_policy: dict[str, Any]
    bucket_arn: str
    secret_arn: str
    accounting_secret_arn: str | None  # the accounting database's password (head node only)
    groups: dict[str, tuple[str, dict[str, str]]]  # pool -> (ASG ARN, ASG tags)
    deployer_user_id: str
    build_policy: dict[str, Any] | None  # the image build role's (None: no image is baked)

    @property
    def build_role(self) -> str:
        return f"{self.plan.name}-image-build"

    @property
    def head(self) -> str:
        return f"{self.plan.name}-head"

    def pool_role(self, pool: str) -> str:
        return f"{self.plan.name}-pool-{pool}"


@cache
def cluster_iam(stem: str) -> ClusterIam:
    definition = example(stem)
    plan = plan_of(definition)
    result = run_ok(definition)
    # The deployer's identity, as the program saw it.
    assert any(token == T_CALLER for token, _ in result.invokes)
    user_id = call_stand_in(T_CALLER, {}, plan.region)["userId"]
    groups = {
        g.inputs["name"].removeprefix(f"{definition['name']}-pool-"): (
            g.outputs["arn"],
            {t["key"]: t["value"] for t in g.inputs["tags"]},
        )
        for g in result.of_type(T_ASG)
    }
    policies = {
        p.inputs["name"]: json.loads(p.inputs["policy"]) for p in result.of_type(T_ROLE_POLICY)
    }
    build_policy = policies.pop(f"{plan.name}-image-build", None)
    return ClusterIam(
        stem=stem,
        plan=plan,
        role_policies=policies,
        build_policy=build_policy,
        role_tags={r.inputs["name"]: r.inputs["tags"] for r in result.of_type(T_ROLE)},
        trust_policies={
            r.inputs["name"]: json.loads(r.inputs["assumeRolePolicy"])
            for r in result.of_type(T_ROLE)
        },
        bucket_policy=json.loads(result.one(T_BUCKET_POLICY).inputs["policy"]),
        bucket_arn=result.one(T_BUCKET).outputs["arn"],
        secret_arn=result.one(T_SECRET, f"{plan.name}-munge-key").id,
        accounting_secret_arn=next(
            (
                str(r.id)
                for r in result.of_type(T_SECRET)
                if r.name == f"{plan.name}-accounting-db-password"
            ),
            None,
        ),
        groups=groups,
        deployer_user_id=user_id,
    )


@pytest.fixture(params=EXAMPLE_IDS)
def iam(request: pytest.FixtureRequest) -> ClusterIam:
    return cluster_iam(request.param)


def listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def test_one_role_per_pool_and_each_node_uses_its_own(iam: ClusterIam) -> None:
    plan = iam.plan
    expected = {iam.head} | {iam.pool_role(p.name) for p in plan.pools}
    assert set(iam.role_policies) == expected
    # ... and the image build role, for the instances Image Builder builds images on.
    assert iam.build_policy is not None
    assert set(iam.role_tags) == expected | {iam.build_role}
    result = run_ok(example(iam.stem))
    profiles = {p.inputs["name"]: p.inputs["role"] for p in result.of_type(T_PROFILE)}
    assert profiles == {name: name for name in expected | {iam.build_role}}
    assert result.one(T_INSTANCE).inputs["iamInstanceProfile"] == iam.head
    for template in result.of_type(T_LT):
        arn = template.inputs["iamInstanceProfile"]["arn"]
        assert arn == f"arn:aws:iam::{ACCOUNT_ID}:instance-profile/{template.inputs['name']}"
    # Nothing attached beyond the inline policy (no managed policy reads every parameter).
    assert not result.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    for name, trust in iam.trust_policies.items():
        (statement,) = trust["Statement"]
        assert statement == {
            "Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }, name
    for name, tags in iam.role_tags.items():
        assert tags[CLUSTER_TAG] == plan.name and tags[ROLE_TAG] == "identity", name
        if name not in (iam.head, iam.build_role):
            assert tags[POOL_TAG] == name.removeprefix(f"{plan.name}-pool-")


def power_scoped(plan: ClusterPlan, statement: dict[str, Any], resource: str) -> bool:
    """The head's power programs (elastic pools): EC2 resources under a condition that holds
    them to the cluster (its tag, its launch templates, its Region, or tagging only within a
    launch, which those hold), the pools' own roles, and EC2 Fleet's service-linked role."""
    if not plan.elastic_pools:
        return False
    if resource.startswith(f"arn:aws:ec2:{plan.region}:"):
        condition = json.dumps(statement.get("Condition", {}))
        return any(
            mark in condition
            for mark in (
                f'"{plan.name}"',
                "ec2:LaunchTemplate",
                f'"{plan.region}"',
                "ec2:CreateAction",
            )
        )
    iam_roles = f"arn:aws:iam::{ACCOUNT_ID}:role/"
    return resource.startswith(f"{iam_roles}{plan.name}-") or resource == (
        f"{iam_roles}aws-service-role/ec2fleet.amazonaws.com/AWSServiceRoleForEC2Fleet"
    )


def test_every_statement_is_scoped_to_the_cluster(iam: ClusterIam) -> None:
    plan = iam.plan
    region, levels = plan.region, access_levels()
    own = (
        iam.secret_arn,
        f"{iam.bucket_arn}/config/*",
        f"arn:aws:ssm:{region}:{ACCOUNT_ID}:parameter{plan.parameter_prefix}/*",
        # Container images: the account's repositories in the cluster's Region (read-only,
        # test_nodes_pull_images_from_the_accounts_ecr_and_push_none).
        f"arn:aws:ecr:{region}:{ACCOUNT_ID}:repository/*",
        f"{iam.bucket_arn}/logs/*",  # the head reads the nodes' logs
        f"{iam.bucket_arn}/launches/*",  # the elastic launches' names (head writes, nodes read)
        *(f"{iam.bucket_arn}/logs/{p.name}/${{ec2:SourceInstanceARN}}/*" for p in plan.pools),
        # Observing (tests/stack/test_monitoring.py): the alert topic, the cluster's log groups
        # and, for PutEvents only, the account's default bus.
        f"arn:aws:sns:{region}:{ACCOUNT_ID}:{plan.name}-alerts",
        f"arn:aws:events:{region}:{ACCOUNT_ID}:event-bus/default",
        *(
            f"arn:aws:logs:{region}:{ACCOUNT_ID}:log-group:/slurmstack/{plan.name}/{s}:*"
            for s in ("slurmctld", "slurmdbd", "slurmd", "agent", "health-check")
        ),
    )
    head_only = (iam.accounting_secret_arn,)
    group_prefix = f"arn:aws:autoscaling:{region}:{ACCOUNT_ID}:autoScalingGroup:*:"
    for role, policy in iam.role_policies.items():
        # IAM quota: a role's inline policies total at most 10,240 characters (whitespace
        # not counted) (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html).
        assert len(json.dumps(policy, separators=(",", ":"))) < 10_240
        for statement in policy["Statement"]:
            actions = listed(statement["Action"])
            for action in actions:
                assert action.lower() in levels, f"{action} is not an AWS action"
            if statement["Effect"] == "Deny":
                continue
            mutating = [a for a in actions if levels[a.lower()] not in READ_LEVELS]
            for resource in listed(statement["Resource"]):
                if resource == "*":
                    # No mutating action on every resource without a condition.
                    assert not mutating or statement.get("Condition"), (role, mutating)
                    continue
                efs = f"arn:aws:elasticfilesystem:{region}:{ACCOUNT_ID}:file-system/*"
                assert (
                    resource in own
                    or (resource == efs and cluster_tagged(statement, plan.name))
                    or (  # prune-images: the cluster's own AMIs and snapshots
                        role == iam.head
                        and resource.startswith(f"arn:aws:ec2:{region}:")
                        and cluster_tagged(statement, plan.name)
                    )
                    or (role == iam.head and resource in head_only)
                    or (role == iam.head and power_scoped(plan, statement, resource))
                    or (
                        resource.startswith(group_prefix)
                        and f"autoScalingGroupName/{plan.name}-pool-" in resource
                    )
                ), (role, resource)


def cluster_tagged(statement: dict[str, Any], cluster: str) -> bool:
    condition = statement.get("Condition", {}).get("StringEquals", {})
    return bool(condition.get(f"aws:ResourceTag/{CLUSTER_TAG}") == cluster)


def test_efs_mounts_work_without_the_vpcs_dns_hostnames(iam: ClusterIam) -> None:
    """In a VPC of your own without DNS hostnames, efs-utils finds the mount target's address
    with two read-only calls (its README's fallback): every node that mounts EFS may make
    them, for the cluster's own file systems only; a node that mounts none may not."""
    plan = iam.plan
    fs = f"arn:aws:elasticfilesystem:{plan.region}:{ACCOUNT_ID}:file-system/fs-0123456789abcdef0"
    own, other = {f"aws:ResourceTag/{CLUSTER_TAG}": plan.name}, {}
    roles = {iam.head: plan.mounts, **{iam.pool_role(p.name): p.mounts for p in plan.pools}}
    for role, mounts in roles.items():
        policy = iam.role_policies[role]
        efs = any(m.kind.value == "efs" for m in mounts)
        want = "allow" if efs else "implicit-deny"
        assert decide([policy], "elasticfilesystem:DescribeMountTargets", fs, own) == want, role
        assert decide([policy], "ec2:DescribeAvailabilityZones", "*") == want, role
        assert decide([policy], "elasticfilesystem:DescribeMountTargets", fs, other) != "allow"
    if plan.spec.storage.home is not None:  # EFS /home: the head mounts it
        assert any(m.kind.value == "efs" for m in plan.mounts)


def test_the_image_build_role_reads_its_bundles_and_components_only(iam: ClusterIam) -> None:
    """The instances Image Builder builds on: the cluster's build bundles and components, the
    SSM agent in the cluster's region; not the munge key, parameters or configuration, no write."""
    policy, bucket, plan = iam.build_policy, iam.bucket_arn, iam.plan
    assert policy is not None
    region, levels = plan.region, access_levels()
    component = (
        f"arn:aws:imagebuilder:{region}:{ACCOUNT_ID}:component/{plan.name}-image-cpu-x/1.0.0/1"
    )
    other = f"arn:aws:imagebuilder:{region}:{ACCOUNT_ID}:component/other-image-cpu-x/1.0.0/1"

    def ask(action: str, resource: str, context: dict[str, str] | None = None) -> str:
        return decide([policy], action, resource, context)

    assert ask("s3:GetObject", f"{bucket}/images/0123abcd") == "allow"
    assert ask("imagebuilder:GetComponent", component) == "allow"
    assert ask("imagebuilder:GetComponent", other) == "implicit-deny"
    assert ask("s3:GetObject", f"{bucket}/config/0123abcd") == "implicit-deny"
    assert ask("s3:GetObject", f"{bucket}/checkpoints/step-100") == "implicit-deny"
    assert ask("secretsmanager:GetSecretValue", iam.secret_arn) == "implicit-deny"
    parameter = f"arn:aws:ssm:{region}:{ACCOUNT_ID}:parameter{plan.parameter_prefix}/head/address"
    assert ask("ssm:GetParameter", parameter) == "implicit-deny"
    for action in ("s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion"):
        assert ask(action, f"{bucket}/images/0123abcd") == "deny", action
    assert ask("ssm:UpdateInstanceInformation", "*", {"aws:RequestedRegion": region}) == "allow"
    assert ask("ssm:UpdateInstanceInformation", "*", {"aws:RequestedRegion": "xx-east-9"}) == (
        "implicit-deny"
    )
    # Scoped like the node roles: no mutating action on every resource without a condition.
    logs = f"arn:aws:logs:{region}:{ACCOUNT_ID}:log-group:/aws/imagebuilder/{plan.name}-image-*"
    own = (f"{bucket}/images/*", policies.image_component_arn(plan, ACCOUNT_ID), logs)
    for statement in policy["Statement"]:
        if statement["Effect"] == "Deny":
            continue
        mutating = [a for a in listed(statement["Action"]) if levels[a.lower()] not in READ_LEVELS]
        for resource in listed(statement["Resource"]):
            assert resource in own or (
                resource == "*" and (not mutating or statement.get("Condition"))
            )


def test_a_pool_node_marks_only_its_own_pools_instances(iam: ClusterIam) -> None:
    action = "autoscaling:SetInstanceHealth"
    for pool in iam.plan.pools:
        policy = iam.role_policies[iam.pool_role(pool.name)]
        for other, (arn, group_tags) in iam.groups.items():
            context = {f"aws:ResourceTag/{k}": v for k, v in group_tags.items()}
            expected = "allow" if other == pool.name else "implicit-deny"
            assert decide([policy], action, arn, context) == expected, (pool.name, other)
    # The head node replaces any node of the cluster, and only of the cluster: a group of a
    # cluster named "<this>-pool-x" matches the name pattern, not the tag.
    head = iam.role_policies[iam.head]
    for arn, group_tags in iam.groups.values():
        context = {f"aws:ResourceTag/{k}": v for k, v in group_tags.items()}
        assert decide([head], action, arn, context) == "allow"
    name = iam.plan.name
    foreign = arn.rsplit("/", 1)[0] + f"/{name}-pool-x-pool-a"
    context = {f"aws:ResourceTag/{CLUSTER_TAG}": f"{name}-pool-x"}
    assert decide([head], action, foreign, context) == "implicit-deny"


def test_a_pool_node_completes_only_its_own_pools_launch(iam: ClusterIam) -> None:
    """The join hook (slurmstack.node.boot.join_hook): a node keeps alive and completes the launch
    action of its own pool's group only, and may ask whether it waits there."""
    for action in (
        "autoscaling:CompleteLifecycleAction",
        "autoscaling:RecordLifecycleActionHeartbeat",
    ):
        for pool in iam.plan.pools:
            policy = iam.role_policies[iam.pool_role(pool.name)]
            for other, (arn, group_tags) in iam.groups.items():
                context = {f"aws:ResourceTag/{k}": v for k, v in group_tags.items()}
                expected = "allow" if other == pool.name else "implicit-deny"
                assert decide([policy], action, arn, context) == expected, (action, pool.name)
    for pool in iam.plan.pools:
        policy = iam.role_policies[iam.pool_role(pool.name)]
        assert decide([policy], "autoscaling:DescribeAutoScalingInstances", "*", {}) == "allow"


def test_nodes_read_the_config_store_and_write_nothing(iam: ClusterIam) -> None:
    bucket = iam.bucket_arn
    prefix = iam.plan.parameter_prefix
    parameter = f"arn:aws:ssm:{iam.plan.region}:{ACCOUNT_ID}:parameter"
    for role, policy in iam.role_policies.items():

        def ask(action: str, resource: str, policy: dict[str, Any] = policy) -> str:
            return decide([policy], action, resource)

        assert ask("s3:GetObject", f"{bucket}/config/0123abcd") == "allow", role
        assert ask("s3:GetObject", f"{bucket}/datasets/shard-0") == "implicit-deny"
        assert ask("s3:PutObject", f"{bucket}/config/0123abcd") == "deny"
        assert ask("s3:DeleteObject", f"{bucket}/config/0123abcd") == "deny"
        assert ask("s3:PutObject", f"{bucket}/checkpoints/step-100") == "implicit-deny"
        for action in ("s3:DeleteObjectVersion", "s3:PutLifecycleConfiguration"):
            resource = f"{bucket}/checkpoints/step-100" if "Object" in action else bucket
            assert ask(action, resource) == "deny", (role, action)
        assert ask("secretsmanager:GetSecretValue", iam.secret_arn) == "allow"
        other_secret = iam.secret_arn.replace("munge-key", "other")
        assert ask("secretsmanager:GetSecretValue", other_secret) == "implicit-deny"
        assert ask("ssm:GetParameter", f"{parameter}{prefix}/head/address") == "allow"
        assert ask("ssm:GetParameter", f"{parameter}/another-app/db-password") == "implicit-deny"


def test_nodes_pull_images_from_the_accounts_ecr_and_push_none(iam: ClusterIam) -> None:
    """Jobs' container images: every node may get a token and pull from the account's
    repositories in the cluster's Region; nothing else of ECR, and no other account or Region."""
    region, levels = iam.plan.region, access_levels()
    elsewhere = "eu-west-1" if region != "eu-west-1" else "us-east-1"
    repository = f"arn:aws:ecr:{region}:{ACCOUNT_ID}:repository/team/trainer"
    for role, policy in iam.role_policies.items():
        assert decide([policy], "ecr:GetAuthorizationToken", "*") == "allow", role
        for action in policies.ECR_PULL_ACTIONS:
            assert decide([policy], action, repository) == "allow", (role, action)
            assert levels[action.lower()] == "Read"
            other_region = repository.replace(f":{region}:", f":{elsewhere}:")
            assert decide([policy], action, other_region) == "implicit-deny", (role, action)
            other_account = repository.replace(ACCOUNT_ID, "999999999999")
            assert decide([policy], action, other_account) == "implicit-deny", (role, action)
        for action in ("ecr:PutImage", "ecr:InitiateLayerUpload", "ecr:BatchDeleteImage"):
            assert decide([policy], action, repository) == "implicit-deny", (role, action)
        ecr = [
            a for st in policy["Statement"] for a in listed(st["Action"]) if a.startswith("ecr:")
        ]
        assert set(ecr) == {"ecr:GetAuthorizationToken", *policies.ECR_PULL_ACTIONS}
    # The image build role pulls nothing.
    assert iam.build_policy is not None
    assert decide([iam.build_policy], "ecr:BatchGetImage", repository) == "implicit-deny"


def test_only_the_head_node_reads_the_accounting_password(iam: ClusterIam) -> None:
    arn = iam.accounting_secret_arn
    assert arn is not None  # every example keeps accounting on, with the local database
    assert arn.startswith(
        f"arn:aws:secretsmanager:{iam.plan.region}:{ACCOUNT_ID}:secret:"
        f"slurmstack/{iam.plan.name}/accounting-db-password-"
    )
    action = "secretsmanager:GetSecretValue"
    assert decide([iam.role_policies[iam.head]], action, arn) == "allow"
    for pool in iam.plan.pools:
        assert decide([iam.role_policies[iam.pool_role(pool.name)]], action, arn) == (
            "implicit-deny"
        )


def test_an_external_database_secret_is_read_by_name_or_arn() -> None:
    """The definition names an external database's secret; the head reads that one only."""
    from slurmstack.stack.policies import accounting_secret_arn, head_policy

    for given, expected in (
        ("db/slurm", f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:db/slurm-??????"),
        (
            f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:db/slurm-AbCdEf",
            f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:db/slurm-AbCdEf",
        ),
    ):
        definition = example("p5-training")
        definition["slurm"]["accounting"]["database"] = {
            "type": "external",
            "host": "db.example.internal",
            "password_secret": given,
        }
        plan = plan_of(definition)
        arn = accounting_secret_arn(plan, ACCOUNT_ID, None)
        assert arn == expected
        munge = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:munge-AbCdEf"
        scope = {"account": ACCOUNT_ID, "bucket_arn": "arn:aws:s3:::bucket", "secret_arn": munge}
        policy = head_policy(plan, **scope, accounting_secret=arn)
        action = "secretsmanager:GetSecretValue"
        real = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:db/slurm-AbCdEf"
        assert decide([policy], action, real) == "allow"
        other = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:db/other-AbCdEf"
        assert decide([policy], action, other) == "implicit-deny"
        for _, issue, detail in lint(policy):
            assert ("node", issue, detail) in ACCEPTED_FINDINGS, (issue, detail)
        # The stack creates no password for it.
        result = run_ok(definition)
        assert not result.of_type("random:index/randomPassword:RandomPassword")


def test_ssm_agent_writes_only_in_the_clusters_region(iam: ClusterIam) -> None:
    region = iam.plan.region
    elsewhere = "eu-west-1" if region != "eu-west-1" else "us-east-1"
    for policy in iam.role_policies.values():
        for action in ("ssm:UpdateInstanceInformation", "ssmmessages:OpenDataChannel"):
            assert decide([policy], action, "*", {"aws:RequestedRegion": region}) == "allow"
            assert decide([policy], action, "*", {"aws:RequestedRegion": elsewhere}) == (
                "implicit-deny"
            )


@cache
def community_config() -> dict[str, Any]:
    """The community auditors' findings and their severities (parliament's own config does
    not list them, and enhance_finding refuses what it does not list)."""
    text = resources.files("parliament").joinpath("community_auditors/config_override.yaml")
    loaded: dict[str, Any] = yaml.safe_load(text.read_text())
    return loaded


def lint(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    policy = parliament.analyze_policy_string(json.dumps(document), include_community_auditors=True)
    found = []
    for finding in policy.findings:
        try:
            parliament.enhance_finding(finding)
        except Exception:  # a community auditor's issue parliament's own config lacks
            finding.severity = "UNKNOWN"
        found.append((finding.severity, finding.issue, str(finding.detail or finding.location)))
    return found


def test_every_document_passes_the_linter(iam: ClusterIam) -> None:
    documents: list[tuple[str, str, dict[str, Any]]] = [
        ("node", role, policy) for role, policy in iam.role_policies.items()
    ]
    assert iam.build_policy is not None
    documents.append(("node", iam.build_role, iam.build_policy))
    documents += [("trust", role, trust) for role, trust in iam.trust_policies.items()]
    documents.append(("bucket", "bucket", iam.bucket_policy))
    for kind, name, document in documents:
        for severity, issue, detail in lint(document):
            power = name == iam.head and bool(iam.plan.elastic_pools)
            if power and accepted_power_finding(issue, detail):
                continue
            assert (kind, issue, detail) in ACCEPTED_FINDINGS, (name, severity, issue, detail)


def test_the_linter_is_not_a_rubber_stamp() -> None:
    """The same linter flags what the rules above forbid."""
    loose = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "autoscaling:SetInstanceHealth", "Resource": "*"},
            {"Effect": "Allow", "Action": "s3:GetObjectt", "Resource": "*"},
        ],
    }
    issues = {issue for _, issue, _ in lint(loose)}
    assert {"RESOURCE_STAR", "UNKNOWN_ACTION"} <= issues
    # ... and the community auditors' findings, by their own severity.
    token = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "sts:GetSessionToken", "Resource": "*"}],
    }
    found = [(issue, detail) for _, issue, detail in lint(token)]
    assert ("CREDENTIALS_EXPOSURE", "{'actions': ['sts:getsessiontoken'], 'filepath': None}") in (
        found
    )


def test_bucket_refuses_plain_http_and_keeps_versions_for_administrators(iam: ClusterIam) -> None:
    policy, bucket = iam.bucket_policy, iam.bucket_arn
    obj = f"{bucket}/checkpoints/step-100"
    deployer = {"aws:userid": iam.deployer_user_id, "aws:SecureTransport": "true"}
    # Without TLS nobody gets anything, the deployer included.
    for action, resource in (("s3:GetObject", obj), ("s3:ListBucket", bucket)):
        insecure = {**deployer, "aws:SecureTransport": "false"}
        assert decide([policy], action, resource, insecure) == "deny"
        assert decide([policy], action, resource, deployer) == "implicit-deny"  # not denied
    # Object versions: the deployer and the account root; no one else, nodes included.
    version = "s3:DeleteObjectVersion"
    root = {"aws:userid": ACCOUNT_ID, "aws:SecureTransport": "true"}
    assert decide([policy], version, obj, deployer) != "deny"
    assert decide([policy], version, obj, root) != "deny"
    node_session = {"aws:userid": "AROAEXAMPLENODEROLE:i-0123456789abcdef0"}
    someone = {"aws:userid": "AIDAEXAMPLEOTHERUSER"}
    for context in (node_session, someone):
        assert decide([policy], version, obj, {**context, "aws:SecureTransport": "true"}) == "deny"
    # The cluster's node roles (by the tags they carry) never write the config store.
    for role, role_tags in iam.role_tags.items():
        context = {f"aws:PrincipalTag/{k}": v for k, v in role_tags.items()}
        context["aws:SecureTransport"] = "true"
        assert decide([policy], "s3:PutObject", f"{bucket}/config/x", context) == "deny", role
        assert decide([policy], "s3:GetObject", f"{bucket}/config/x", context) != "deny"
    # The stack (the deployer, no such tags) writes it.
    assert decide([policy], "s3:PutObject", f"{bucket}/config/x", deployer) != "deny"


def test_listed_administrators_delete_versions_whoever_deployed_last() -> None:
    """storage.bucket.administrators: a CI role (any session of it) and an SSO role by
    wildcard may delete object versions though someone else ran the latest `pulumi up`; an
    unlisted role still may not, nor may a node. Without the list, only the root and the
    latest deployer may (the CI role is refused)."""
    from slurmstack.stack.policies import bucket_policy
    from support.stack import small_cluster

    ci = f"arn:aws:iam::{ACCOUNT_ID}:role/ci-deployer"
    sso = f"arn:aws:iam::{ACCOUNT_ID}:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Admin_*"
    definition = small_cluster()
    definition["storage"]["bucket"] = {"administrators": [ci, sso]}
    bucket = "arn:aws:s3:::tiny-bucket"
    deployer = "AIDAEXAMPLEDEPLOYER0"

    def policy_of(definition: dict[str, Any]) -> dict[str, Any]:
        return bucket_policy(
            plan_of(definition), account=ACCOUNT_ID, bucket_arn=bucket, deployer_user_id=deployer
        )

    def who(userid: str, arn: str) -> dict[str, str]:
        return {"aws:userid": userid, "aws:PrincipalArn": arn, "aws:SecureTransport": "true"}

    listed, unlisted = policy_of(definition), policy_of(small_cluster())
    version, obj = "s3:DeleteObjectVersion", f"{bucket}/checkpoints/step-100"
    ci_session = who("AROAEXAMPLECIROLE:gh-run-42", ci)
    sso_session = who(
        "AROAEXAMPLESSOROLE:alice@example.com",
        f"arn:aws:iam::{ACCOUNT_ID}:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Admin_0a1b",
    )
    other = who("AROAEXAMPLEOTHER:bob", f"arn:aws:iam::{ACCOUNT_ID}:role/data-scientist")
    node = who("AROAEXAMPLENODEROLE:i-0123", f"arn:aws:iam::{ACCOUNT_ID}:role/tiny-pool-gpu")
    last = who(deployer, f"arn:aws:iam::{ACCOUNT_ID}:user/alice")
    for context in (ci_session, sso_session, last):
        assert decide([listed], version, obj, context) != "deny", context
    for context in (other, node):
        assert decide([listed], version, obj, context) == "deny", context
    assert decide([unlisted], version, obj, ci_session) == "deny"
    assert decide([unlisted], version, obj, last) != "deny"


def test_the_head_prunes_only_the_clusters_images_and_snapshots(iam: ClusterIam) -> None:
    """prune-images: DeregisterImage and DeleteSnapshot on resources tagged as this cluster's
    (the stack tags the AMI and its root snapshot), nothing else; no pool node may."""
    head = iam.role_policies[iam.head]
    region, name = iam.plan.region, iam.plan.name
    own = {f"aws:ResourceTag/{CLUSTER_TAG}": name}
    other = {f"aws:ResourceTag/{CLUSTER_TAG}": f"{name}-x"}
    for action, arn in (
        ("ec2:DeregisterImage", f"arn:aws:ec2:{region}::image/ami-0123456789abcdef0"),
        (
            "ec2:DeleteSnapshot",
            f"arn:aws:ec2:{region}::snapshot/snap-0123456789abcdef0",
        ),
    ):
        assert decide([head], action, arn, own) == "allow", action
        assert decide([head], action, arn, other) == "implicit-deny", action
        assert decide([head], action, arn, {}) == "implicit-deny", action
        for pool in iam.plan.pools:
            policy = iam.role_policies[iam.pool_role(pool.name)]
            assert decide([policy], action, arn, own) == "implicit-deny", (pool.name, action)
    for read in ("ec2:DescribeImages", "ec2:DescribeLaunchTemplateVersions"):
        assert decide([head], read, "*") == "allow"


def test_a_node_writes_its_own_logs_only(iam: ClusterIam) -> None:
    """Under logs/<pool>/<its own instance ARN>/: IAM fills in the calling instance's ARN, so a
    node cannot write another node's logs, another pool's, or anything else."""
    bucket, region = iam.bucket_arn, iam.plan.region
    me = f"arn:aws:ec2:{region}:{ACCOUNT_ID}:instance/i-0aaaaaaaaaaaaaaaa"
    other = f"arn:aws:ec2:{region}:{ACCOUNT_ID}:instance/i-0bbbbbbbbbbbbbbbb"
    signed = {"ec2:SourceInstanceARN": me}
    pools = [p.name for p in iam.plan.pools]
    for pool in pools:
        policy = iam.role_policies[iam.pool_role(pool)]

        def put(key: str, context: dict[str, str], policy: dict[str, Any] = policy) -> str:
            return decide([policy], "s3:PutObject", f"{bucket}/{key}", context)

        assert put(f"logs/{pool}/{me}/var/log/slurm/slurmd.log", signed) == "allow"
        assert put(f"logs/{pool}/{other}/var/log/slurm/slurmd.log", signed) == "implicit-deny"
        assert put(f"logs/{pool}/{me}/x", {}) == "implicit-deny"  # no instance credentials
        for elsewhere in [p for p in pools if p != pool]:
            assert put(f"logs/{elsewhere}/{me}/x", signed) == "implicit-deny"
        assert put("checkpoints/step-100", signed) == "implicit-deny"
        assert put("config/0123abcd", signed) == "deny"
        for action in ("s3:GetObject", "s3:DeleteObject"):
            key = f"{bucket}/logs/{pool}/{me}/x"
            assert decide([policy], action, key, signed) == "implicit-deny", action
    head = iam.role_policies[iam.head]
    assert decide([head], "s3:GetObject", f"{bucket}/logs/{pools[0]}/{me}/shipped.json") == "allow"
    assert decide([head], "s3:PutObject", f"{bucket}/logs/{pools[0]}/{me}/x", signed) == (
        "implicit-deny"
    )


def test_the_head_controller_acts_on_its_clusters_groups_only(iam: ClusterIam) -> None:
    head = iam.role_policies[iam.head]
    actions = (
        "autoscaling:CompleteLifecycleAction",
        "autoscaling:RecordLifecycleActionHeartbeat",
        "autoscaling:SuspendProcesses",
        "autoscaling:ResumeProcesses",
    )
    name = iam.plan.name
    for action in actions:
        for arn, group_tags in iam.groups.values():
            context = {f"aws:ResourceTag/{k}": v for k, v in group_tags.items()}
            assert decide([head], action, arn, context) == "allow", action
        foreign = arn.rsplit("/", 1)[0] + f"/{name}-pool-x-pool-a"
        context = {f"aws:ResourceTag/{CLUSTER_TAG}": f"{name}-pool-x"}
        assert decide([head], action, foreign, context) == "implicit-deny", action
    for action in ("autoscaling:TerminateInstanceInAutoScalingGroup", "ec2:TerminateInstances"):
        assert decide([head], action, "*") == "implicit-deny"
    reads = (
        "ec2:DescribeCapacityReservations",
        "ec2:DescribeInstanceTopology",
        "autoscaling:DescribeAutoScalingGroups",
    )
    for read in reads:
        assert decide([head], read, "*") == "allow"
    for pool in iam.plan.pools:  # the pools' nodes have none of it but their own launch's
        policy = iam.role_policies[iam.pool_role(pool.name)]
        arn, group_tags = iam.groups[pool.name]
        context = {f"aws:ResourceTag/{k}": v for k, v in group_tags.items()}
        for action in actions[2:]:
            assert decide([policy], action, arn, context) == "implicit-deny"
