"""boot: the boot health check; on failure the logs go to the bucket and the instance is
marked Unhealthy in its Auto Scaling group (slurmd never starts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack.node import cli
from slurmstack.node.boot import config_sync
from slurmstack.node.context import Context
from slurmstack.node.health import boot
from slurmstack.node.health.devices import GPU_QUERY
from slurmstack.node.health.diagnostic import DIAG
from support.node import (
    Answers,
    asg_with_instance,
    fake_devices,
    identity,
    make_node,
    mounted_everything,
    nvidia_smi,
    publish_config,
)


def health_node(tmp_path: Path, aws, instance: str, run: Answers) -> Context:
    publish_config(aws, "train")
    metadata = {"instance-id": instance, "dynamic/instance-identity/document": identity(instance)}
    node = make_node(tmp_path, aws, "train", run=run, imds=metadata.__getitem__)
    config_sync.sync_config(node, poll=0)
    mounted_everything(tmp_path, ["/home", "/fsx"])
    return node


def health_status(aws, instance: str) -> str:
    status = aws.client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance])
    return str(status["AutoScalingInstances"][0]["HealthStatus"]).upper()


def shipped(aws) -> list[str]:
    listing = aws.client("s3").list_objects_v2(Bucket="llm-train-bucket", Prefix="logs/")
    return [o["Key"] for o in listing.get("Contents", [])]


def test_health_passes_with_every_device_answering(aws, tmp_path: Path) -> None:
    instance = asg_with_instance(aws)
    run = Answers({GPU_QUERY[:2]: (0, nvidia_smi(8))})
    node = health_node(tmp_path, aws, instance, run)
    fake_devices(tmp_path, gpus=8, efa=32)
    assert boot.health(node) == []
    assert health_status(aws, instance) == "HEALTHY"
    assert list(DIAG) in run.calls  # first boot: DCGM's diagnostic ran, and passed
    assert shipped(aws) == []


@pytest.mark.parametrize(
    ("gpus", "efa", "answer", "check"),
    [
        (7, 32, (0, nvidia_smi(7)), "gpu-count"),
        (8, 31, (0, nvidia_smi(8)), "efa-count"),
        (8, 32, (124, ""), "gpu-smi"),
    ],
)
def test_health_ships_logs_and_marks_the_instance_unhealthy(
    aws, tmp_path: Path, gpus: int, efa: int, answer, check: str
) -> None:
    instance = asg_with_instance(aws)
    run = Answers({GPU_QUERY[:2]: answer})
    node = health_node(tmp_path, aws, instance, run)
    fake_devices(tmp_path, gpus=gpus, efa=efa)
    problems = boot.health(node)
    assert problems and problems[0].startswith(f"slurmstack:{check}: ")
    assert health_status(aws, instance) == "UNHEALTHY"
    assert list(DIAG) not in run.calls  # a node known bad does not run the long diagnostic
    prefix = f"logs/train/arn:aws:ec2:us-east-1:123456789012:instance/{instance}/"
    assert f"{prefix}var/log/slurmstack/health.log" in shipped(aws)
    assert f"{prefix}shipped.json" in shipped(aws)
    assert cli.main(["--root", str(tmp_path), "health"], ctx=node) == 1


def test_a_failed_diagnostic_fails_the_boot(aws, tmp_path: Path) -> None:
    instance = asg_with_instance(aws)
    run = Answers({GPU_QUERY[:2]: (0, nvidia_smi(8)), DIAG: (226, "")})
    node = health_node(tmp_path, aws, instance, run)
    fake_devices(tmp_path, gpus=8, efa=32)
    assert boot.health(node) == ["slurmstack:gpu-diag: dcgmi diag -r 2 failed: exit 226"]
    assert health_status(aws, instance) == "UNHEALTHY"


def test_a_gpu_lost_at_probe_is_named_before_the_missing_count(aws, tmp_path: Path) -> None:
    """The driver's probe-time message (NVIDIA/NVSentinel#155, data/kernel) names the GPU:
    the boot check says which one fell off the bus, not only that one is missing."""
    from node.health.test_kernel_events import sample
    from support.node import kernel_log

    instance = asg_with_instance(aws)
    run = Answers({GPU_QUERY[:2]: (0, nvidia_smi(7))})
    node = health_node(tmp_path, aws, instance, run)
    fake_devices(tmp_path, gpus=7, efa=32)
    kernel_log(tmp_path, *sample("bus-lost-at-probe.log"))
    problems = boot.health(node)
    assert problems[0] == (
        "slurmstack:gpu-lost: GPU 0000:b3:00.0 (PCI ID 10de:26b5) has fallen off the bus and "
        "does not answer"
    )
    assert problems[1].startswith("slurmstack:gpu-count: 7 of 8 GPUs present")
    assert health_status(aws, instance) == "UNHEALTHY"
