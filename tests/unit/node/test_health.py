"""health: the boot health check, and the Unhealthy mark it leaves in the Auto Scaling group."""

from __future__ import annotations

from pathlib import Path

import pytest

from node.support import asg_with_instance, fake_devices, make_node, publish_config
from slurmstack.node import cli, config_sync, health
from slurmstack.node.context import Context


def health_node(tmp_path, aws, instance: str) -> Context:
    publish_config(aws, "train")
    node = make_node(tmp_path, aws, "train", imds={"instance-id": instance}.__getitem__)
    config_sync.sync_config(node, poll=0)
    return node


def test_health_passes_with_every_device(aws, tmp_path: Path) -> None:
    instance = asg_with_instance(aws)
    node = health_node(tmp_path, aws, instance)
    fake_devices(tmp_path, gpus=8, efa=32)
    assert health.health(node) == []
    status = aws.client("autoscaling").describe_auto_scaling_instances()
    assert status["AutoScalingInstances"][0]["HealthStatus"].upper() == "HEALTHY"


@pytest.mark.parametrize(("gpus", "efa", "problem"), [(7, 32, "GPU"), (8, 31, "EFA")])
def test_health_marks_the_instance_unhealthy(aws, tmp_path, gpus, efa, problem) -> None:
    instance = asg_with_instance(aws)
    node = health_node(tmp_path, aws, instance)
    fake_devices(tmp_path, gpus=gpus, efa=efa)
    problems = health.health(node)
    assert len(problems) == 1 and problem in problems[0]
    status = aws.client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance])
    assert status["AutoScalingInstances"][0]["HealthStatus"].upper() == "UNHEALTHY"
    assert cli.main(["--root", str(tmp_path), "health"], ctx=node) == 1
