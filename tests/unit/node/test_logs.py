"""logs: a node's logs to the bucket, under its own instance's prefix, the marker last."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurmstack.contract import CLOUD_INIT_OUTPUT_PATH, SLURMD_LOG_PATH
from slurmstack.node import cli, logs
from slurmstack.node.context import AgentError
from support.node import identity, make_node, publish_config

PREFIX = "logs/train/arn:aws:ec2:us-east-1:123456789012:instance/i-0abc/"


def test_ship_logs_writes_what_exists_under_the_instance_prefix(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    metadata = {"dynamic/instance-identity/document": identity("i-0abc")}
    node = make_node(tmp_path, aws, "train", imds=metadata.__getitem__)
    from slurmstack.node.boot import config_sync

    config_sync.sync_config(node, poll=0)
    for path, text in ((CLOUD_INIT_OUTPUT_PATH, "booted\n"), (SLURMD_LOG_PATH, "x" * 100)):
        (tmp_path / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path.lstrip("/")).write_text(text)
    written = logs.ship_logs(node, "a test")
    assert written == [
        f"{PREFIX}var/log/cloud-init-output.log",
        f"{PREFIX}var/log/slurm/slurmd.log",
        f"{PREFIX}shipped.json",
    ]
    s3 = aws.client("s3")
    body = s3.get_object(Bucket="llm-train-bucket", Key=written[0])["Body"].read()
    assert body == b"booted\n"
    marker = json.loads(s3.get_object(Bucket="llm-train-bucket", Key=written[-1])["Body"].read())
    assert marker["why"] == "a test" and marker["files"] == [
        CLOUD_INIT_OUTPUT_PATH,
        SLURMD_LOG_PATH,
    ]
    assert cli.main(["ship-logs", "--why", "again"], ctx=node) == 0


def test_a_long_log_keeps_its_tail() -> None:
    data = b"a" * logs.MAX_BYTES + b"the end"
    assert logs.tail(data).endswith(b"the end") and len(logs.tail(data)) == logs.MAX_BYTES


def test_the_head_keeps_its_logs(aws, tmp_path: Path) -> None:
    publish_config(aws, "head")
    node = make_node(tmp_path, aws, "head")
    from slurmstack.node.boot import config_sync

    config_sync.sync_config(node, poll=0)
    with pytest.raises(AgentError, match="head node keeps its logs"):
        logs.ship_logs(node, "no")
