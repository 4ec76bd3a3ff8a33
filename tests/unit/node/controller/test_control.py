"""control and breaker (the package's entry points): one pass observes, decides, remembers and
acts; a dry run only says; the breaker is shown and reset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurmstack.contract import CONTROLLER_LOG_PATH, CONTROLLER_STATE_PATH
from slurmstack.node import cli, controller
from slurmstack.node.boot import config_sync
from slurmstack.node.context import AgentError
from slurmstack.node.controller import state as memory
from slurmstack.node.controller.state import Trip
from support.node import PLAN, Answers, make_node, publish_config

SCONTROL = ("env", "SLURM_TIME_FORMAT=standard", "scontrol")
# A node of the cluster's train pool with no instance anywhere: the controller sets it DOWN.
LOST = (
    "NodeName=train-263 NodeAddr=10.42.1.7 State=ALLOCATED+DYNAMIC_NORM CPUAlloc=96 "
    "AvailableFeatures=train\n"
)


def head(tmp_path: Path, aws) -> tuple:
    publish_config(aws, "head")
    run = Answers(
        {
            (*SCONTROL, "--all"): (0, LOST),
            (*SCONTROL, "show", "config"): (0, "SlurmUser = slurm(64030)\n"),
        }
    )
    node = make_node(tmp_path, aws, "head", run=run, imds={}.__getitem__)
    config_sync.sync_config(node, poll=0)
    run.calls.clear()
    return node, run


def test_a_pass_sets_down_a_node_whose_instance_is_gone(aws, tmp_path: Path, capsys) -> None:
    node, run = head(tmp_path, aws)
    dry = controller.control(node, dry_run=True)
    assert [a["action"] for a in dry["would"]] == ["down"]
    assert not any(c[:2] == ["scontrol", "update"] for c in run.calls)
    assert cli.main(["control"], ctx=node) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["aws"] and [a["action"] for a in result["actions"]] == ["down"]
    down = [c for c in run.calls if c[:2] == ["scontrol", "update"]]
    assert down == [
        ["scontrol", "update", "nodename=train-263", "state=down",
         "reason=slurmstack:instance-gone: no live instance of the cluster at 10.42.1.7"],
    ]  # fmt: skip
    log = (tmp_path / CONTROLLER_LOG_PATH.lstrip("/")).read_text()
    assert '"action": "down"' in log and '"ok": true' in log
    assert (tmp_path / CONTROLLER_STATE_PATH.lstrip("/")).exists()


def test_control_runs_on_the_head_only(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    node = make_node(tmp_path, aws, "train")
    config_sync.sync_config(node, poll=0)
    with pytest.raises(AgentError, match="head node"):
        controller.control(node)


def test_the_breaker_is_shown_and_reset(aws, tmp_path: Path, capsys) -> None:
    node, _run = head(tmp_path, aws)
    asg = aws.client("autoscaling")
    ec2 = aws.client("ec2")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    asg.create_launch_configuration(LaunchConfigurationName="lc", ImageId=image,
                                    InstanceType="t3.micro")  # fmt: skip
    group = f"{PLAN.name}-pool-train"
    asg.create_auto_scaling_group(AutoScalingGroupName=group, LaunchConfigurationName="lc",
                                  MinSize=0, MaxSize=0, AvailabilityZones=["us-east-1a"])  # fmt: skip
    asg.suspend_processes(AutoScalingGroupName=group, ScalingProcesses=["ReplaceUnhealthy"])
    state = memory.ControllerState(
        replacements={"train": ((1.0, "i-1"),)}, breakers={"train": Trip(1.0, "3 in 60 min")}
    )
    memory.save(node, state)
    assert cli.main(["breaker"], ctx=node) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["train"]["open"] and shown["train"]["why"] == "3 in 60 min"
    assert shown["dev"]["open"] is False
    assert cli.main(["breaker", "reset", "train"], ctx=node) == 0
    capsys.readouterr()
    assert memory.load(node).breakers == {}
    described = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[group])
    assert described["AutoScalingGroups"][0]["SuspendedProcesses"] == []
    assert '"action": "reset-breaker"' in (tmp_path / CONTROLLER_LOG_PATH.lstrip("/")).read_text()
    assert cli.main(["breaker", "reset", "nope"], ctx=node) == 1
    assert cli.main(["breaker", "reset"], ctx=node) == 2
