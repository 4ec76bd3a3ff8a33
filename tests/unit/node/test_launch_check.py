"""launch-check (slurmstack.node.power.launch_check) against moto: at the head's boot, one
dry-run EC2 Fleet launch per elastic pool, exactly the request the ResumeProgram sends (tags
included). moto answers a permitted dry run with DryRunOperation, as EC2 does, and, with its
IAM enforcement on, a caller whose policy lacks ec2:CreateFleet with AccessDenied, before it
looks at DryRun. A refused pool is an event, a plain line, its nodes DOWN with the refusal
and the pool waiting as after a failed launch."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core import set_initial_no_auth_action_count

from slurmstack.contract import (
    BOOTSTRAP_ENV_PATH,
    CLUSTER_TAG,
    ELASTIC_TAG,
    NODE_CONFIG_PATH,
    POWER_STATE_PATH,
    Command,
    DeployParameter,
    bootstrap_env_text,
)
from slurmstack.node.commands import COMMANDS
from slurmstack.node.context import Context
from slurmstack.node.events import read_events
from slurmstack.node.power.launch_check import launch_check
from slurmstack.render import role_files
from slurmstack.render.cloud_init import bootstrap_env
from support.stack import plan_of, small_cluster

REGION = "us-east-1"
SUBNET = "subnet-0123456789abcdef0"
# Two elastic pools: a GPU pool with no always-on node and a spot CPU pool.
DEFINITION = small_cluster(count=0, max_count=2)
DEFINITION["pools"].append(
    {
        "name": "cpu",
        "instance_type": "c7i.large",
        "count": 1,
        "max_count": 3,
        "capacity": {"type": "spot"},
    }
)
PLAN = plan_of(DEFINITION)


class Slurm:
    """scontrol as the head's slurmctld answers the check's calls."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        self.calls.append(cmd)
        out = ""
        if "hostnames" in cmd:
            out = {"gpu-e[1-2]": "gpu-e1\ngpu-e2\n", "cpu-e[1-2]": "cpu-e1\ncpu-e2\n"}[cmd[-1]]
        return subprocess.CompletedProcess(cmd, 0, out, "")

    def updates(self) -> list[list[str]]:
        return [c for c in self.calls if "update" in c]


def head(tmp_path: Path, session: Any, run: Slurm) -> Context:
    for path, text in (
        (BOOTSTRAP_ENV_PATH, bootstrap_env_text(bootstrap_env(PLAN, "head"))),
        (NODE_CONFIG_PATH, role_files(PLAN, "head")[NODE_CONFIG_PATH]),
    ):
        target = tmp_path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return Context(root=tmp_path, session=session, run=run, clock=lambda: 1_700_000_000.0)


def put_subnet(session: Any) -> None:
    session.client("ssm").put_parameter(
        Name=PLAN.parameter(DeployParameter.COMPUTE_SUBNET_ID), Value=SUBNET, Type="String"
    )


def sent_requests(session: Any) -> list[dict[str, Any]]:
    """Every CreateFleet request the session's EC2 clients send, as built."""
    sent: list[dict[str, Any]] = []
    session.events.register(
        "provide-client-params.ec2.CreateFleet", lambda params, **_: sent.append(dict(params))
    )
    return sent


def test_a_permitted_pool_is_an_ok_event_and_nothing_is_launched(tmp_path: Path) -> None:
    with mock_aws():
        session = boto3.session.Session(region_name=REGION)
        put_subnet(session)
        sent = sent_requests(session)
        run = Slurm()
        result = launch_check(head(tmp_path, session, run))
        ec2 = session.client("ec2")
        assert ec2.describe_instances()["Reservations"] == []
    assert result == {"ok": ["gpu", "cpu"], "refused": {}}
    assert [r["DryRun"] for r in sent] == [True, True]
    # The request the ResumeProgram sends for one node: template, subnet, capacity, tags.
    gpu = sent[0]
    assert gpu["Type"] == "instant"
    assert gpu["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]["LaunchTemplateName"] == (
        "tiny-pool-gpu"
    )
    assert gpu["LaunchTemplateConfigs"][0]["Overrides"][0]["SubnetId"] == SUBNET
    assert gpu["TargetCapacitySpecification"]["TotalTargetCapacity"] == 1
    assert sent[1]["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"
    for spec in gpu["TagSpecifications"]:
        tags = {t["Key"]: t["Value"] for t in spec["Tags"]}
        assert tags[CLUSTER_TAG] == "tiny" and tags[ELASTIC_TAG] == "gpu", spec
    assert {s["ResourceType"] for s in gpu["TagSpecifications"]} == {"instance", "fleet"}
    events = read_events(head(tmp_path, None, run))
    assert [(e["event"], e["subject"], e["ok"]) for e in events] == [
        ("launch-check", "gpu", True),
        ("launch-check", "cpu", True),
    ]
    assert "DryRunOperation" in events[0]["detail"]
    assert run.updates() == []  # no node touched
    assert not (tmp_path / POWER_STATE_PATH.lstrip("/")).exists()


DENY_FLEETS = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": ["ssm:GetParameter", "ssm:GetParameters", "ec2:Describe*"],
            "Resource": "*",
        }
    ],
}


def test_a_refused_pool_is_an_event_a_line_and_its_nodes_down_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """moto with IAM enforcement: a head whose policy lacks ec2:CreateFleet."""
    with mock_aws():
        admin = boto3.session.Session(region_name=REGION)
        put_subnet(admin)
        iam = admin.client("iam")
        iam.create_user(UserName="head")
        iam.put_user_policy(
            UserName="head", PolicyName="no-fleet", PolicyDocument=json.dumps(DENY_FLEETS)
        )
        key = iam.create_access_key(UserName="head")["AccessKey"]
        denied = boto3.session.Session(
            region_name=REGION,
            aws_access_key_id=key["AccessKeyId"],
            aws_secret_access_key=key["SecretAccessKey"],
        )
        run = Slurm()
        result = _denied_check(tmp_path, denied, run)
    assert result["ok"] == []
    assert set(result["refused"]) == {"gpu", "cpu"}
    assert result["refused"]["gpu"].startswith("AccessDenied: ")
    assert "ec2:CreateFleet" in result["refused"]["gpu"]
    # The event, with what to grant.
    events = read_events(head(tmp_path, None, run))
    gpu = [e for e in events if e["subject"] == "gpu"]
    assert gpu[0]["ok"] is False and gpu[0]["nodes"] == "gpu-e[1-2]"
    assert "may not launch this pool: AccessDenied" in gpu[0]["detail"]
    assert "docs/images.md" in gpu[0]["detail"]
    # One plain line per pool on stderr (cloud-init's output, the console).
    err = capsys.readouterr().err
    assert "launch-check: gpu: FAILED: the head may not launch this pool: AccessDenied" in err
    # The pool's nodes DOWN with the refusal as their reason, in the `launch` check's form.
    down = [c for c in run.updates() if "state=DOWN" in c]
    assert "nodename=gpu-e1,gpu-e2" in down[0]
    (reason,) = [a for a in down[0] if a.startswith("reason=")]
    assert reason.startswith("reason=slurmstack:launch: dry run refused: AccessDenied")
    # Both pools wait as after a failed launch: the power sweep offers them again when due.
    state = json.loads((tmp_path / POWER_STATE_PATH.lstrip("/")).read_text())
    assert set(state["pools"]) == {"gpu", "cpu"}
    assert state["pools"]["gpu"]["failures"] == 1


def _denied_check(tmp_path: Path, session: Any, run: Slurm) -> dict[str, Any]:
    @set_initial_no_auth_action_count(0)
    def check() -> dict[str, Any]:
        return launch_check(head(tmp_path, session, run))

    return check()


def test_the_agent_has_the_subcommand_and_the_head_boots_through_it() -> None:
    from slurmstack.render import user_data

    assert Command.LAUNCH_CHECK in {c.name for c in COMMANDS}
    head_document = user_data(PLAN, "head")
    assert f"slurmstack-node, {Command.LAUNCH_CHECK}]" in head_document
    # After slurmctld is up (the DOWN reasons need it).
    assert head_document.index("slurmctld") < head_document.index(Command.LAUNCH_CHECK)
    # A cluster without elastic pools has no such step.
    assert Command.LAUNCH_CHECK not in user_data(plan_of(small_cluster()), "head")
