"""Helpers for the stack tests (tests/stack): run infra/__main__.py under the offline engine (Pulumi
mocks, preview=False) and look at what it registered."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from pathlib import Path
from typing import Any

import yaml

from slurmstack.offline import OfflineRun, run_definition
from slurmstack.plan import ClusterPlan, build_plan
from slurmstack.validate import validate_object

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
EXAMPLE_IDS = [p.stem for p in EXAMPLES]

T_INSTANCE = "aws:ec2/instance:Instance"
T_ENI = "aws:ec2/networkInterface:NetworkInterface"
T_LT = "aws:ec2/launchTemplate:LaunchTemplate"
T_ASG = "aws:autoscaling/group:Group"
T_HOOK = "aws:autoscaling/lifecycleHook:LifecycleHook"
T_PG = "aws:ec2/placementGroup:PlacementGroup"
T_SG = "aws:ec2/securityGroup:SecurityGroup"
T_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
T_EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
T_VOLUME = "aws:ebs/volume:Volume"
T_BUCKET = "aws:s3/bucket:Bucket"
T_SSE = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
T_LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
T_DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
T_EFS = "aws:efs/fileSystem:FileSystem"
T_MOUNT_TARGET = "aws:efs/mountTarget:MountTarget"
T_RANDOM = "random:index/randomBytes:RandomBytes"
T_PASSWORD = "random:index/randomPassword:RandomPassword"
T_SECRET = "aws:secretsmanager/secret:Secret"
T_SECRET_VERSION = "aws:secretsmanager/secretVersion:SecretVersion"
T_PARAM = "aws:ssm/parameter:Parameter"
T_OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"
T_ASSOCIATION = "aws:ssm/association:Association"
T_ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"

# Each run takes a fraction of a second; the same definition is run once per session.
_RUNS: dict[str, OfflineRun] = {}


def run(definition: dict[str, Any]) -> OfflineRun:
    key = json.dumps(definition, sort_keys=True)
    if key not in _RUNS:
        _RUNS[key] = run_definition(definition)
    return _RUNS[key]


def run_ok(definition: dict[str, Any]) -> OfflineRun:
    result = run(definition)
    assert result.error is None, f"program failed: {result.error}"
    return result


def example(stem: str) -> dict[str, Any]:
    data = yaml.safe_load((REPO / "examples" / f"{stem}.yaml").read_text())
    assert isinstance(data, dict)
    return data


def plan_of(definition: dict[str, Any]) -> ClusterPlan:
    result = validate_object(definition)
    assert result.ok and result.spec is not None, [f.line() for f in result.findings]
    return build_plan(result.spec)


def small_cluster(**pool: Any) -> dict[str, Any]:
    """A minimal valid definition with one pool (overridden by keyword arguments)."""
    base_pool: dict[str, Any] = {"name": "gpu", "instance_type": "p5.48xlarge", "count": 2}
    base_pool.update(pool)
    return {
        "name": "tiny",
        "region": "us-east-1",
        "availability_zone": "us-east-1a",
        "head_node": {"instance_type": "m7i.xlarge"},
        "pools": [base_pool],
        "storage": {
            "lustre": {"capacity_gib": 2400, "deployment": "SCRATCH_2"},
            "home": {"type": "efs"},
        },
    }


def with_changes(definition: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(definition)
    out.update(changes)
    return out


def user_data_bytes(result: OfflineRun) -> dict[str, bytes]:
    """The user data EC2 gets (gzip-compressed, before base64) of the head node and every
    launch template, by resource name."""
    raw: dict[str, bytes] = {}
    for resource in result.of_type(T_INSTANCE):
        raw[resource.name] = base64.b64decode(resource.inputs["userDataBase64"])
    for resource in result.of_type(T_LT):
        raw[resource.name] = base64.b64decode(resource.inputs["userData"])
    return raw


def user_data_texts(result: OfflineRun) -> dict[str, str]:
    """The cloud-init documents of the head node and every launch template, by resource name."""
    return {name: gzip.decompress(raw).decode() for name, raw in user_data_bytes(result).items()}
