"""The agent's part of login nodes' monitoring and of managed Prometheus, against moto: a login
node ships its agent's events and its authentication log to their groups (nothing of a
worker's); the head lists the login pools' running instances as scrape targets from their
tags and keeps the last list when EC2 cannot be read; `prometheus-config` puts the
workspace's remote-write URL in place of the rendered stand-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurmstack.contract import (
    AUTH_LOG_PATH,
    BOOTSTRAP_ENV_PATH,
    CLUSTER_TAG,
    EVENTS_LOG_PATH,
    HEALTH_LOG_PATH,
    LOGIN_POOL_TAG,
    LOGIN_TARGETS_FILE,
    PROMETHEUS_LIVE_CONFIG,
    REMOTE_WRITE_URL_PLACEHOLDER,
    SLURMD_LOG_PATH,
    BootstrapEnv,
    DeployParameter,
    LogSource,
    MonitoringConfig,
    bootstrap_env_text,
    log_group_name,
)
from slurmstack.node.context import AgentError, Context
from slurmstack.node.observe import remote_write, targets
from slurmstack.node.observe.log_shipper import follow
from slurmstack.render.people import login_node_config
from support.node import INSTANCE_ID as INSTANCE
from support.node import shipping_node
from support.stack import plan_of, small_cluster


def _team_plan() -> object:
    definition = small_cluster()
    definition["login_pools"] = [{"name": "login", "instance_type": "m7i.2xlarge", "count": 2}]
    return plan_of(definition)


PLAN = _team_plan()


def login_node(tmp_path: Path, aws) -> Context:
    return shipping_node(tmp_path, aws, PLAN, login_node_config(PLAN, PLAN.login_pools[0]))


def append(ctx: Context, node_path: str, text: str) -> None:
    path = ctx.path(node_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(text)


def shipped(aws, source: LogSource) -> list[str]:
    logs = aws.client("logs", region_name=PLAN.region)
    try:
        events = logs.get_log_events(logGroupName=log_group_name(PLAN.name, source),
                                     logStreamName=INSTANCE, startFromHead=True)["events"]  # fmt: skip
    except logs.exceptions.ResourceNotFoundException:
        return []
    return [e["message"] for e in events]


def test_a_login_node_ships_its_events_and_its_authentication_log(aws, tmp_path: Path) -> None:
    ctx = login_node(tmp_path, aws)
    append(
        ctx,
        AUTH_LOG_PATH,
        "sshd[812]: Accepted publickey for alice\nsudo: alice : COMMAND=/bin/ls\n",
    )
    append(ctx, EVENTS_LOG_PATH, '{"event": "identities"}\n')
    append(ctx, SLURMD_LOG_PATH, "no slurmd on a login node\n")
    append(ctx, HEALTH_LOG_PATH, "no health checks either\n")
    assert follow(ctx, once=True) == 3
    assert shipped(aws, LogSource.LOGIN) == [
        "sshd[812]: Accepted publickey for alice",
        "sudo: alice : COMMAND=/bin/ls",
    ]
    assert shipped(aws, LogSource.AGENT) == ['{"event": "identities"}']
    assert shipped(aws, LogSource.SLURMD) == shipped(aws, LogSource.HEALTH_CHECK) == []


def head(tmp_path: Path, session: object) -> Context:
    ctx = Context(root=tmp_path, session=session)
    env = BootstrapEnv(PLAN.name, PLAN.region, "head", PLAN.parameter_prefix, "m", "p", "b")
    ctx.path(BOOTSTRAP_ENV_PATH).parent.mkdir(parents=True, exist_ok=True)
    ctx.path(BOOTSTRAP_ENV_PATH).write_text(bootstrap_env_text(env))
    return ctx


def _launch(aws, cluster: str, tags: dict[str, str], count: int = 1) -> list[str]:
    ec2 = aws.client("ec2", region_name=PLAN.region)
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    spec = [{"ResourceType": "instance",
             "Tags": [{"Key": k, "Value": v} for k, v in {CLUSTER_TAG: cluster, **tags}.items()]}]  # fmt: skip
    made = ec2.run_instances(ImageId=image, MinCount=count, MaxCount=count,
                             InstanceType="m7i.2xlarge", TagSpecifications=spec)  # fmt: skip
    return [i["InstanceId"] for i in made["Instances"]]


def test_the_head_scrapes_the_login_pools_running_instances(aws, tmp_path: Path) -> None:
    ctx = head(tmp_path, aws)
    monitoring = MonitoringConfig(
        cluster=PLAN.name, slurm_native_metrics=False, accounting=False, login_pools=("login",)
    )
    mine = _launch(aws, PLAN.name, {LOGIN_POOL_TAG: "login"}, count=2)
    _launch(aws, "other", {LOGIN_POOL_TAG: "login"})  # another cluster's
    _launch(aws, PLAN.name, {"slurmstack:pool": "gpu"})  # a worker: listed from Slurm
    gone = _launch(aws, PLAN.name, {LOGIN_POOL_TAG: "login"})
    aws.client("ec2", region_name=PLAN.region).terminate_instances(InstanceIds=gone)
    assert targets.write_login_targets(ctx, monitoring) == 2
    groups = json.loads(ctx.path(LOGIN_TARGETS_FILE).read_text())
    assert sorted(g["labels"]["node"] for g in groups) == sorted(mine)
    assert {g["labels"]["pool"] for g in groups} == {"login/login"}
    assert all(g["targets"][0].endswith(":9100") for g in groups)


def test_login_targets_keep_their_last_list_when_ec2_fails(tmp_path: Path) -> None:
    class Refusing:
        def client(self, *args: object, **kwargs: object) -> object:
            from botocore.exceptions import NoCredentialsError

            raise NoCredentialsError()

    ctx = head(tmp_path, Refusing())
    path = ctx.path(LOGIN_TARGETS_FILE)
    path.parent.mkdir(parents=True)
    path.write_text('[{"labels": {"node": "i-1"}, "targets": ["10.0.0.1:9100"]}]\n')
    before = path.read_text()
    monitoring = MonitoringConfig(
        cluster=PLAN.name, slurm_native_metrics=False, accounting=False, login_pools=("login",)
    )
    assert targets.write_login_targets(ctx, monitoring) is None
    assert path.read_text() == before
    # Without login pools the file is an empty list, and EC2 is not asked.
    none = MonitoringConfig(cluster=PLAN.name, slurm_native_metrics=False, accounting=False)
    assert targets.write_login_targets(ctx, none) == 0
    assert json.loads(path.read_text()) == []


def test_prometheus_config_puts_the_workspaces_url_in(aws, tmp_path: Path) -> None:
    ctx = head(tmp_path, aws)
    rendered = ctx.path("/etc/slurmstack/prometheus/prometheus.yml")
    rendered.parent.mkdir(parents=True)
    rendered.write_text(f"remote_write:\n- url: {REMOTE_WRITE_URL_PLACEHOLDER}\n")
    url = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write"
    aws.client("ssm", region_name=PLAN.region).put_parameter(
        Name=PLAN.parameter(DeployParameter.REMOTE_WRITE_URL), Value=url, Type="String"
    )
    assert remote_write.write_live_config(ctx, "/etc/slurmstack/prometheus/prometheus.yml") == url
    assert ctx.path(PROMETHEUS_LIVE_CONFIG).read_text() == f"remote_write:\n- url: {url}\n"
    with pytest.raises(AgentError, match="not an https"):
        remote_write.live_config(rendered.read_text(), "http://example.invalid/x")
    with pytest.raises(AgentError, match="no remote-write endpoint"):
        remote_write.live_config("global: {}\n", url)
