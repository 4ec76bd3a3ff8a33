"""`slurmstack logs FILE NODE` against moto: a node named by its Slurm name, 'head' or its
instance id; the lines the node's shipper wrote, oldest first, every source or --source's;
--since; --follow printing what comes later once; an unknown node or an undeployed cluster is
one line and exit 1, never a traceback."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from slurmstack.cli import app
from slurmstack.contract import (
    CLUSTER_TAG,
    LAUNCH_TAG,
    POOL_TAG,
    ROLE_TAG,
    DeployParameter,
    LogSource,
    launch_key,
    launch_names_text,
    log_group_name,
    node_name,
    node_name_prefix,
)
from slurmstack.node_logs import LogsError, node_logs, since_millis
from support.examples import example_plan

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "p5-training.yaml"
PLAN = example_plan("p5-training")
REGION = PLAN.region
POOL = PLAN.pools[0].name


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield boto3.session.Session(region_name=REGION)


def launch(session: Any, **tags: str) -> dict[str, Any]:
    ec2 = session.client("ec2")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    spec = [{"ResourceType": "instance",
             "Tags": [{"Key": k, "Value": v} for k, v in {CLUSTER_TAG: PLAN.name, **tags}.items()]}]  # fmt: skip
    return ec2.run_instances(
        ImageId=image, MinCount=1, MaxCount=1, InstanceType="m7i.large", TagSpecifications=spec
    )["Instances"][0]


def write(session: Any, source: LogSource, instance: str, *messages: str, at: float) -> None:
    logs = session.client("logs")
    group = log_group_name(PLAN.name, source)
    if not logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]:
        logs.create_log_group(logGroupName=group)
    if not logs.describe_log_streams(logGroupName=group, logStreamNamePrefix=instance)[
        "logStreams"
    ]:
        logs.create_log_stream(logGroupName=group, logStreamName=instance)
    events = [{"timestamp": int(at * 1000) + i, "message": m} for i, m in enumerate(messages)]
    logs.put_log_events(logGroupName=group, logStreamName=instance, logEvents=events)


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["logs", str(EXAMPLE), *args])


def test_a_workers_logs_by_its_slurm_name_oldest_first(aws) -> None:
    worker = launch(aws, **{ROLE_TAG: "pool", POOL_TAG: POOL})
    other = launch(aws, **{ROLE_TAG: "pool", POOL_TAG: POOL})
    now = time.time()
    write(aws, LogSource.SLURMD, worker["InstanceId"], "slurmd started", at=now - 60)
    write(aws, LogSource.HEALTH_CHECK, worker["InstanceId"], "gpu-xid failed", at=now - 30)
    write(aws, LogSource.SLURMD, other["InstanceId"], "someone else's", at=now - 20)
    name = node_name(node_name_prefix(POOL), worker["PrivateIpAddress"])
    result = run(name)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [ln.split(" ", 1)[1] for ln in lines] == [
        "slurmd: slurmd started", "health-check: gpu-xid failed"
    ]  # fmt: skip
    assert run(worker["InstanceId"]).stdout == result.stdout
    only = run(name, "--source", "health-check")
    assert only.stdout.splitlines() == lines[1:]
    recent = run(name, "--since", "45s")
    assert recent.stdout.splitlines() == lines[1:]


def test_the_head_and_an_elastic_node_by_their_names(aws) -> None:
    head = launch(aws, **{ROLE_TAG: "head"})
    elastic = launch(aws, **{ROLE_TAG: "pool", POOL_TAG: POOL, LAUNCH_TAG: "fleet-1"})
    aws.client("s3").create_bucket(Bucket="llm-train-bucket")
    aws.client("ssm").put_parameter(
        Name=PLAN.parameter(DeployParameter.BUCKET), Value="llm-train-bucket", Type="String"
    )
    names = launch_names_text({elastic["InstanceId"]: f"{POOL}-e3"})
    aws.client("s3").put_object(
        Bucket="llm-train-bucket", Key=launch_key("fleet-1"), Body=names.encode()
    )
    write(aws, LogSource.SLURMCTLD, head["InstanceId"], "slurmctld up", at=time.time())
    write(aws, LogSource.SLURMD, elastic["InstanceId"], "elastic slurmd", at=time.time())
    assert run("head").stdout.endswith("slurmctld: slurmctld up\n")
    assert run(f"{POOL}-e3").stdout.endswith("slurmd: elastic slurmd\n")


def test_follow_prints_what_comes_later_once(aws) -> None:
    worker = launch(aws, **{ROLE_TAG: "pool", POOL_TAG: POOL})
    instance = worker["InstanceId"]
    now = time.time()
    write(aws, LogSource.SLURMD, instance, "first", at=now - 10)

    written: list[str] = []

    def later(_seconds: float) -> None:  # the shipper writes one line while the CLI waits
        if not written:
            write(aws, LogSource.SLURMD, instance, "second", at=now - 5)
            written.append("second")

    events = node_logs(aws, PLAN, instance, [LogSource.SLURMD], None, follow=True, sleep=later,
                       polls=3)  # fmt: skip
    assert [e.message for e in events] == ["first", "second"]


def test_an_unknown_node_or_cluster_is_one_line_and_exit_1(aws) -> None:
    result = run("train-99")
    assert result.exit_code == 1
    assert "not deployed" in result.stderr and "Traceback" not in result.output
    launch(aws, **{ROLE_TAG: "head"})
    result = run("train-99")
    assert result.exit_code == 1
    assert "no node 'train-99' in cluster llm-train" in result.stderr
    result = run("head")
    assert result.exit_code == 1 and "no logs of head" in result.stderr
    result = run("head", "--source", "nginx")
    assert result.exit_code == 1 and "--source 'nginx'" in result.stderr
    result = run("head", "--since", "yesterday")
    assert result.exit_code == 1 and "--since 'yesterday'" in result.stderr


def test_since_takes_an_age_or_a_time() -> None:
    assert since_millis("10m", 1000.0) == 400_000
    assert since_millis("2025-06-15T15:00:00Z", 0) == 1_749_999_600_000
    with pytest.raises(LogsError):
        since_millis("10 minutes", 0)
