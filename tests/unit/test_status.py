"""`slurmstack status FILE` against moto's in-process AWS: the head, each pool's group with its
nodes by state and health and its breaker, the elastic nodes, recent repair actions from the
groups' activity history, the alert topic and its subscriptions; a cluster that is not deployed
says so; AWS refusing the calls is a message and exit 1, never a traceback."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws
from typer.testing import CliRunner

from slurmstack.cli import app
from slurmstack.contract import CLUSTER_TAG, ELASTIC_TAG, ROLE_TAG, DeployParameter
from slurmstack.status import ACTIVITIES, PoolStatus, _activities
from support.examples import example_plan

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "p5-training.yaml"
PLAN = example_plan("p5-training")
REGION = PLAN.region


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield boto3.session.Session(region_name=REGION)


def tags(**pairs: str) -> list[dict[str, Any]]:
    return [
        {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in pairs.items()]}
    ]


def deploy(session: Any) -> dict[str, str]:
    """The part of the stack status reads: the head, the pools' groups, an elastic node, the
    alert topic and its parameter."""
    ec2 = session.client("ec2")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    ec2.run_instances(
        ImageId=image, MinCount=1, MaxCount=1, InstanceType="m7i.4xlarge",
        TagSpecifications=tags(**{CLUSTER_TAG: PLAN.name, ROLE_TAG: "head"}),
    )  # fmt: skip
    ec2.run_instances(
        ImageId=image, MinCount=1, MaxCount=1, InstanceType="g6e.12xlarge",
        TagSpecifications=tags(**{CLUSTER_TAG: PLAN.name, ELASTIC_TAG: "dev"}),
    )  # fmt: skip
    autoscaling = session.client("autoscaling")
    for pool in PLAN.pools:
        name = f"{PLAN.name}-pool-{pool.name}"
        ec2.create_launch_template(
            LaunchTemplateName=name, LaunchTemplateData={"ImageId": image, "InstanceType": "m5.large"}
        )  # fmt: skip
        autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=name, LaunchTemplate={"LaunchTemplateName": name},
            MinSize=2, MaxSize=2, DesiredCapacity=2, AvailabilityZones=[PLAN.spec.availability_zone],
        )  # fmt: skip
    train = f"{PLAN.name}-pool-train"
    group = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[train])
    sick = group["AutoScalingGroups"][0]["Instances"][0]["InstanceId"]
    # What the controller does: a node marked for replacement, then the breaker trips.
    autoscaling.set_instance_health(InstanceId=sick, HealthStatus="Unhealthy")
    autoscaling.suspend_processes(AutoScalingGroupName=train, ScalingProcesses=["ReplaceUnhealthy"])
    topic = session.client("sns").create_topic(Name=f"{PLAN.name}-alerts")["TopicArn"]
    session.client("sns").subscribe(TopicArn=topic, Protocol="email", Endpoint="ops@example.com")
    session.client("ssm").put_parameter(
        Name=PLAN.parameter(DeployParameter.ALERT_TOPIC_ARN), Value=topic, Type="String"
    )
    return {"topic": topic, "sick": sick}


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["status", *args])


def test_status_reads_the_cluster_from_aws(aws: Any) -> None:
    deployed = deploy(aws)
    result = run(str(EXAMPLE), "--json")
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    assert status["cluster"] == PLAN.name and status["head"]["state"] == "running"
    pools = {p["name"]: p for p in status["pools"]}
    assert set(pools) == {p.name for p in PLAN.pools}
    train, dev = pools["train"], pools["dev"]
    assert train["breaker_open"] is True and dev["breaker_open"] is False
    assert train["unhealthy"] == [deployed["sick"]] and dev["unhealthy"] == []
    assert train["states"] == {"InService": 2} and train["desired"] == 2
    assert dev["elastic_running"] == 1 and train["elastic_running"] == 0
    # moto keeps no activity history (test_repair_actions_are_the_groups_activities).
    assert status["activities"] == []
    assert status["alert_topic"] == deployed["topic"]
    assert sum(status["subscriptions"].values()) == 1
    text = run(str(EXAMPLE))
    assert text.exit_code == 0, text.output
    assert "pool train: 2 wanted; 2 InService; 1 unhealthy; breaker OPEN" in text.stdout
    assert f"  unhealthy: {deployed['sick']}" in text.stdout


def test_a_cluster_not_deployed_says_so(aws: Any) -> None:
    result = run(str(EXAMPLE))
    assert result.exit_code == 0, result.output
    assert "head: none" in result.stdout
    assert f"pool train: no group {PLAN.name}-pool-train (not deployed?)" in result.stdout
    assert "alerts: no topic parameter (not deployed?)" in result.stdout


def test_aws_refusing_is_a_message_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An endpoint that answers nothing (loopback, a closed port) and no retries.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    result = run(str(EXAMPLE))
    assert result.exit_code == 1
    assert "could not read llm-train from AWS (us-east-1)" in result.stderr
    assert "Traceback" not in result.output


def test_a_bad_definition_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    data = yaml.safe_load(EXAMPLE.read_text())
    data["pools"][0]["count"] = -1
    bad.write_text(yaml.safe_dump(data))
    result = run(str(bad))
    assert result.exit_code == 1 and "pools[0].count" in result.stderr


class Activities:
    """Auto Scaling's DescribeScalingActivities, as AWS answers it, for two groups."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def describe_scaling_activities(self, **kwargs: Any) -> dict[str, Any]:
        self.asked.append(kwargs)
        pool = kwargs["AutoScalingGroupName"].rsplit("-", 1)[-1]
        day = {"train": 14, "dev": 15}[pool]
        return {
            "Activities": [
                {
                    "StartTime": datetime(2026, 11, day, hour, tzinfo=UTC),
                    "StatusCode": "Successful",
                    "Description": f"Terminating EC2 instance: i-0{pool}{hour}",
                    "Cause": "an instance was taken out of service in response to a health check",
                }
                for hour in (10, 9)
            ]
        }


def test_repair_actions_are_the_groups_activities_newest_first() -> None:
    client = Activities()
    pools = [
        PoolStatus("train", f"{PLAN.name}-pool-train", found=True),
        PoolStatus("dev", f"{PLAN.name}-pool-dev", found=True),
        PoolStatus("gone", f"{PLAN.name}-pool-gone", found=False),
    ]
    found = _activities(client, pools)
    assert [a.time for a in found] == [
        "2026-11-15T10:00:00Z", "2026-11-15T09:00:00Z", "2026-11-14T10:00:00Z", "2026-11-14T09:00:00Z"
    ]  # fmt: skip
    assert found[0].pool == "dev" and found[0].description == "Terminating EC2 instance: i-0dev10"
    assert [a["AutoScalingGroupName"] for a in client.asked] == [p.group for p in pools[:2]]
    assert all(a["MaxRecords"] == ACTIVITIES for a in client.asked)
