"""observe: the cluster's live instances, its groups' members and suspended processes, its
Capacity Blocks' end dates, and which terminating instances' logs are in the bucket."""

from __future__ import annotations

import datetime
from pathlib import Path

from slurmstack.contract import CLUSTER_TAG, POOL_TAG, PoolRef, instance_arn, log_prefix
from slurmstack.node.boot import config_sync
from slurmstack.node.controller import observe
from support.node import BUCKET, PLAN, Answers, make_node, publish_config

NODES = "NodeName=train-263 NodeAddr=10.42.1.7 State=IDLE+DYNAMIC_NORM Reason=x [slurm@2025-01-01T00:00:00]\n"
CONFIG = "SlurmUser               = slurm(64030)\n"


def head(tmp_path: Path, aws):
    publish_config(aws, "head")
    run = Answers(
        {
            ("env", "SLURM_TIME_FORMAT=standard", "scontrol", "--all"): (0, NODES),
            ("env", "SLURM_TIME_FORMAT=standard", "scontrol", "show"): (0, CONFIG),
        }
    )
    node = make_node(tmp_path, aws, "head", run=run)
    config_sync.sync_config(node, poll=0)
    return node


def launch(aws, pool: str, group: str) -> str:
    ec2, asg = aws.client("ec2"), aws.client("autoscaling")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    template = ec2.create_launch_template(
        LaunchTemplateName=group,
        LaunchTemplateData={
            "ImageId": image,
            "InstanceType": "t3.micro",
            "TagSpecifications": [
                {
                    "ResourceType": "instance",
                    "Tags": [
                        {"Key": CLUSTER_TAG, "Value": PLAN.name},
                        {"Key": POOL_TAG, "Value": pool},
                    ],
                }
            ],
        },
    )
    asg.create_auto_scaling_group(
        AutoScalingGroupName=group,
        LaunchTemplate={"LaunchTemplateId": template["LaunchTemplate"]["LaunchTemplateId"]},
        MinSize=1,
        MaxSize=1,
        DesiredCapacity=1,
        AvailabilityZones=["us-east-1a"],
    )
    found = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[group])
    return str(found["AutoScalingGroups"][0]["Instances"][0]["InstanceId"])


def test_it_sees_slurm_and_the_clusters_instances_and_groups(aws, tmp_path: Path) -> None:
    node = head(tmp_path, aws)
    instance = launch(aws, "train", f"{PLAN.name}-pool-train")
    aws.client("ec2").run_instances(ImageId="ami-12345678", InstanceType="t3.micro", MinCount=1,
                                    MaxCount=1)  # not the cluster's  # fmt: skip
    asg = aws.client("autoscaling")
    asg.suspend_processes(
        AutoScalingGroupName=f"{PLAN.name}-pool-train", ScalingProcesses=["ReplaceUnhealthy"]
    )
    seen = observe.observe(node, node.config())
    assert seen.aws and [n.name for n in seen.nodes] == ["train-263"]
    assert seen.slurm_users == {"slurm", "64030"}
    assert [(i.instance_id, i.pool) for i in seen.instances] == [(instance, "train")]
    (member,) = seen.members
    assert (member.instance_id, member.pool, member.lifecycle_state, member.health_status) == (
        instance, "train", "InService", "Healthy",
    )  # fmt: skip
    assert seen.suspended[f"{PLAN.name}-pool-train"] == {"ReplaceUnhealthy"}
    assert seen.instance_at(seen.instances[0].address) == seen.instances[0]


def test_without_aws_it_sees_slurm_only(tmp_path: Path) -> None:
    from support.node import NoAws

    publish_config_less = make_node(tmp_path, NoAws(), "head", run=Answers({
        ("env", "SLURM_TIME_FORMAT=standard", "scontrol", "--all"): (0, NODES),
        ("env", "SLURM_TIME_FORMAT=standard", "scontrol", "show"): (0, CONFIG),
    }))  # fmt: skip
    pools = (PoolRef("train", "train-", "train", group="g"),)
    from slurmstack.contract import NodeConfig

    config = NodeConfig(PLAN.name, "us-east-1", "head", "/p", "s", (), pools=pools)
    seen = observe.observe(publish_config_less, config)
    assert not seen.aws and len(seen.nodes) == 1 and seen.instances == ()


class Reservations:
    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def describe_capacity_reservations(self, CapacityReservationIds: list[str]):
        self.asked.append(CapacityReservationIds)
        end = datetime.datetime(2025, 6, 15, 16, 0, tzinfo=datetime.UTC)
        return {"CapacityReservations": [{"CapacityReservationId": "cr-1", "EndDate": end}]}


def test_capacity_blocks_end_dates(tmp_path: Path, monkeypatch) -> None:
    node = make_node(tmp_path, None, "head")
    fake = Reservations()
    monkeypatch.setattr(node.aws, "ec2", lambda: fake)
    from slurmstack.contract import NodeConfig

    pools = (
        PoolRef("a", "a-", "a", capacity_type="capacity_block", reservation_id="cr-1"),
        PoolRef("b", "b-", "b", capacity_type="capacity_reservation", reservation_id="cr-2"),
        PoolRef("c", "c-", "c"),
    )
    config = NodeConfig("c", "us-east-1", "head", "/p", "s", (), pools=pools)
    ends = observe.reservation_ends(node, config)
    assert fake.asked == [["cr-1"]]
    assert ends == {"cr-1": datetime.datetime(2025, 6, 15, 16, tzinfo=datetime.UTC).timestamp()}


def test_logs_of_terminating_instances(aws, tmp_path: Path) -> None:
    node = head(tmp_path, aws)
    members = (
        observe.Member("i-1", "g", "train", "Terminating:Wait", "Healthy"),
        observe.Member("i-2", "g", "train", "Terminating:Wait", "Healthy"),
        observe.Member("i-3", "g", "train", "InService", "Healthy"),
    )
    arn = instance_arn("us-east-1", "123456789012", "i-1")
    aws.client("s3").put_object(
        Bucket=BUCKET, Key=log_prefix("train", arn) + "shipped.json", Body=b"{}"
    )
    shipped = observe.logs_shipped(node, node.config(), members, "123456789012")
    assert shipped == {"i-1"}
