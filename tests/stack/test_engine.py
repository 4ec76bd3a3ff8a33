"""The offline engine itself (product code for `slurmstack plan`): fresh runtime per run,
deterministic AWS-shaped stand-ins, resource options recorded."""

from __future__ import annotations

import ipaddress
import re

import pulumi.runtime.settings as runtime_settings
import pytest

from slurmstack.offline import run_definition
from slurmstack.offline.standins import Context, call_stand_in, stand_in
from support.stack import (
    T_BUCKET,
    T_EFS,
    T_INSTANCE,
    T_LT,
    T_LUSTRE,
    T_SECRET_VERSION,
    T_VOLUME,
    example,
    run_ok,
    small_cluster,
)

pytestmark = pytest.mark.stack


def test_runs_are_isolated_and_deterministic() -> None:
    first = run_definition(small_cluster(count=3))
    other = run_definition(example("cpu-hpc"))
    again = run_definition(small_cluster(count=3))
    assert first.error is None and other.error is None and again.error is None
    assert [r.to_dict() for r in first.resources] == [r.to_dict() for r in again.resources]
    assert first.outputs == again.outputs
    assert not {r.urn for r in first.resources} & {r.urn for r in other.resources}
    # Nothing of a run is left in the caller's Pulumi runtime.
    assert runtime_settings.get_root_resource() is None


def test_stand_ins_look_like_aws() -> None:
    result = run_ok(example("p5-training"))
    head = result.one(T_INSTANCE)
    assert re.fullmatch(r"i-[0-9a-f]{17}", str(head.id))
    compute = result.one("aws:ec2/subnet:Subnet", "llm-train-compute")
    address = ipaddress.ip_address(head.outputs["privateIp"])
    assert address in ipaddress.ip_network(compute.inputs["cidrBlock"])
    lustre = result.one(T_LUSTRE)
    assert re.fullmatch(
        r"fs-[0-9a-f]{17}\.fsx\.us-east-1\.amazonaws\.com", lustre.outputs["dnsName"]
    )
    assert re.fullmatch(r"[0-9a-z]{8}", lustre.outputs["mountName"])
    assert re.fullmatch(r"fs-[0-9a-f]{8}", str(result.one(T_EFS).id))
    assert re.fullmatch(r"vol-[0-9a-f]{17}", str(result.one(T_VOLUME).id))
    assert re.fullmatch(r"lt-[0-9a-f]{17}", str(result.one(T_LT, "llm-train-pool-train").id))
    bucket = result.one(T_BUCKET)
    assert re.fullmatch(r"llm-train-bucket-[0-9a-f]{7}", str(bucket.id))
    assert bucket.outputs["arn"] == f"arn:aws:s3:::{bucket.id}"
    secret = result.one("aws:secretsmanager/secret:Secret", "llm-train-munge-key")
    assert re.fullmatch(
        r"arn:aws:secretsmanager:us-east-1:123456789012:secret:slurmstack/llm-train/munge-key-[0-9a-f]{6}",
        str(secret.id),
    )
    role = result.one("aws:iam/role:Role", "llm-train-head")
    assert role.outputs["arn"] == "arn:aws:iam::123456789012:role/llm-train-head"


def test_scratch_lustre_mounts_as_fsx() -> None:
    lustre = Context(T_LUSTRE, "x", {"deploymentType": "SCRATCH_1"}, "eu-west-1")
    _, state = stand_in(lustre)
    assert state["mountName"] == "fsx" and state["dnsName"].endswith(".fsx.eu-west-1.amazonaws.com")


def test_invokes_have_stand_ins() -> None:
    ami = call_stand_in("aws:ssm/getParameter:getParameter", {"name": "/aws/x/ami-id"}, "us-east-1")
    assert re.fullmatch(r"ami-[0-9a-f]{17}", ami["value"])
    assert (
        call_stand_in("aws:index/getCallerIdentity:getCallerIdentity", {}, "us-east-1")["accountId"]
        == "123456789012"
    )


def test_options_and_secrets_are_recorded() -> None:
    result = run_ok(example("p5-training"))
    volume = result.one(T_VOLUME)
    assert volume.options.protect and volume.options.retain_on_delete
    attachment = result.one("aws:ec2/volumeAttachment:VolumeAttachment")
    assert attachment.options.delete_before_replace
    assert attachment.inputs["deviceName"] == "/dev/sdf"
    version = result.one(T_SECRET_VERSION, "llm-train-munge-key")
    assert "secretBinary" in version.secret_inputs
    assert version.to_dict()["inputs"]["secretBinary"] == "[secret]"
    head = result.one(T_INSTANCE)
    network_ready = {
        r.urn
        for r in result.of_type("aws:ec2/route:Route")
        if r.name == "llm-train-compute-default"
    }
    assert network_ready <= set(head.options.depends_on)
    cluster = result.one("slurmstack:index:SlurmCluster")
    assert result.component_of(head) is not None
    assert result.component_of(head).type == "slurmstack:stack:HeadNode"  # type: ignore[union-attr]
    assert result.component_of(cluster) is None
    assert {r.type for r in result.children(cluster.urn)} >= {
        "slurmstack:stack:Network",
        "slurmstack:stack:HeadNode",
        "slurmstack:stack:WorkerPool",
    }
