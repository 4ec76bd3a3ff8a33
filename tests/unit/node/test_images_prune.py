"""prune-images (slurmstack.node.controller.images_prune) against moto: the cluster's AMIs (tagged as the
stack tags them, their root snapshots too) in four bakes of one image key, a pool's launch
template at its third and fourth version, a head instance still on the first AMI, another
cluster's AMI and an untagged one. Only the AMI nothing needs goes, with its snapshot."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends

from slurmstack.contract import CLUSTER_TAG, IMAGE_TAG, NODE_CONFIG_PATH
from slurmstack.node.commands import COMMANDS
from slurmstack.node.controller.images_prune import prune_images
from slurmstack.render import role_files
from support.node import PLAN, REGION, make_node

CLUSTER = PLAN.name


def tags(**pairs: str) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in pairs.items()]


def bake(session: Any, instance: str, name: str, cluster: str | None = CLUSTER) -> str:
    """An AMI of ``instance`` (moto makes its root snapshot), its AMI and snapshot tagged as
    the stack tags them (the snapshot afterwards, as the stack does: ec2.Tag)."""
    ec2 = session.client("ec2")
    ami = str(ec2.create_image(InstanceId=instance, Name=name)["ImageId"])
    # One bake a day (moto dates images to the second: these would tie).
    backend = ec2_backends[DEFAULT_ACCOUNT_ID][REGION]
    backend.amis[ami].creation_date = datetime.datetime(2026, 11, 1) + datetime.timedelta(
        days=len(backend.amis)
    )
    if cluster is not None:
        image_tags = tags(**{CLUSTER_TAG: cluster, IMAGE_TAG: "nvidia-x86-64"})
        ec2.create_tags(Resources=[ami, snapshot_of(session, ami)], Tags=image_tags)
    return ami


def snapshot_of(session: Any, ami: str) -> str:
    image = session.client("ec2").describe_images(ImageIds=[ami])["Images"][0]
    return str(image["BlockDeviceMappings"][0]["Ebs"]["SnapshotId"])


@pytest.fixture
def cluster(aws: Any, tmp_path: Path) -> dict[str, Any]:
    ec2 = aws.client("ec2")
    base = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]

    def instance(image: str, cluster: str = CLUSTER) -> str:
        return str(
            ec2.run_instances(
                ImageId=image,
                InstanceType="t3.micro",
                MinCount=1,
                MaxCount=1,
                TagSpecifications=[
                    {"ResourceType": "instance", "Tags": tags(**{CLUSTER_TAG: cluster})}
                ],
            )["Instances"][0]["InstanceId"]
        )

    builder = instance(base, cluster="image-builds")
    amis = [bake(aws, builder, f"{CLUSTER}-image-nvidia-x86-64-{n}") for n in range(1, 5)]
    foreign = bake(aws, builder, "other-image", cluster="other")
    untagged = bake(aws, builder, "someones-own", cluster=None)
    # The pool's template: v1 and v2 on the first two AMIs, v3 and v4 on the second and third.
    template = ec2.create_launch_template(
        LaunchTemplateName=f"{CLUSTER}-pool-train",
        LaunchTemplateData={"ImageId": amis[0]},
        TagSpecifications=[
            {"ResourceType": "launch-template", "Tags": tags(**{CLUSTER_TAG: CLUSTER})}
        ],
    )["LaunchTemplate"]["LaunchTemplateId"]
    for ami in (amis[1], amis[1], amis[2]):
        ec2.create_launch_template_version(
            LaunchTemplateId=template, LaunchTemplateData={"ImageId": ami}
        )
    instance(amis[0])  # the head, still on the first image
    ctx = make_node(tmp_path, aws, "head")
    config = tmp_path / NODE_CONFIG_PATH.lstrip("/")
    config.write_text(role_files(PLAN, "head")[NODE_CONFIG_PATH])
    return {"ctx": ctx, "amis": amis, "foreign": foreign, "untagged": untagged}


def remaining(session: Any) -> set[str]:
    return {i["ImageId"] for i in session.client("ec2").describe_images(Owners=["self"])["Images"]}


def test_only_the_ami_nothing_needs_goes_with_its_snapshot(
    aws: Any, cluster: dict[str, Any]
) -> None:
    """With --keep 1: the fourth AMI is the newest; the third and second are the template's
    two newest versions'; the first runs the head. A fifth bake makes the second prunable."""
    amis = cluster["amis"]
    result = prune_images(cluster["ctx"], keep=1)
    assert result["pruned"] == [] and result["failed"] == {}, (result, amis)
    assert result["kept"] == {
        amis[0]: ["instances"],
        amis[1]: ["launch templates"],
        amis[2]: ["launch templates"],
        amis[3]: ["newest"],
    }
    # The template moves on twice (a new image rolled out): the second AMI is free.
    ec2 = aws.client("ec2")
    (template,) = ec2.describe_launch_templates()["LaunchTemplates"]
    for ami in (amis[3], amis[3]):
        ec2.create_launch_template_version(
            LaunchTemplateId=template["LaunchTemplateId"], LaunchTemplateData={"ImageId": ami}
        )
    snapshot = snapshot_of(aws, amis[1])
    dry = prune_images(cluster["ctx"], keep=1, dry_run=True)
    assert dry["pruned"] == [amis[1], amis[2]]
    assert amis[1] in remaining(aws)  # a dry run changes nothing
    done = prune_images(cluster["ctx"], keep=1)
    assert done["pruned"] == [amis[1], amis[2]] and done["failed"] == {}
    left = remaining(aws)
    assert amis[1] not in left and amis[2] not in left
    assert {amis[0], amis[3], cluster["foreign"], cluster["untagged"]} <= left
    snapshots = {s["SnapshotId"] for s in ec2.describe_snapshots(OwnerIds=["self"])["Snapshots"]}
    assert snapshot not in snapshots
    assert (
        snapshot_of(aws, amis[0]) in snapshots and snapshot_of(aws, cluster["foreign"]) in snapshots
    )


def test_the_default_keeps_two_per_image(aws: Any, cluster: dict[str, Any]) -> None:
    result = prune_images(cluster["ctx"], dry_run=True)
    amis = cluster["amis"]
    assert result["kept"][amis[3]] == ["newest"]
    assert set(result["kept"][amis[2]]) == {"newest", "launch templates"}
    assert result["pruned"] == []


def test_the_agent_has_the_subcommand(aws: Any, cluster: dict[str, Any], capsys: Any) -> None:
    (row,) = [c for c in COMMANDS if c.name == "prune-images"]
    import argparse

    parser = argparse.ArgumentParser()
    row.arguments(parser)
    assert row.run(cluster["ctx"], parser.parse_args(["--keep", "0"])) == 2
    assert row.run(cluster["ctx"], parser.parse_args(["--dry-run"])) == 0
    printed = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert printed["pruned"] == [] and len(printed["kept"]) == 4
