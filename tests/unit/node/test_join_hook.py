"""joined (slurmstack.node.boot.join_hook) and the bootstrap's ABANDON against moto: an instance of
the pool's group waits in the launch hook (Pending:Wait) until its node is registered in Slurm,
then goes in service; a failed boot abandons its launch.

moto keeps lifecycle hooks but never holds an instance in one and implements neither
RecordLifecycleActionHeartbeat nor CompleteLifecycleAction (as harness/groups.py says for the
virtual cluster's terminations); ``LaunchWait`` below puts the group's instance in Pending:Wait
in moto's own records and gives moto's Auto Scaling API the two calls, checking as AWS does
that the instance waits in that hook of that group."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto.autoscaling.exceptions import ValidationError
from moto.autoscaling.models import autoscaling_backends
from moto.autoscaling.responses import AutoScalingResponse
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.responses import EmptyResult

from slurmstack.contract import JOIN_HOOK_NAME, NodeEnv
from slurmstack.node import bootstrap
from slurmstack.node.boot.join_hook import joined
from slurmstack.node.context import AgentError
from support.node import REGION, asg_with_instance, make_node

GROUP = "llm-train-pool-train"
NAME = "train-1811"


class LaunchWait:
    """Calls on the launch hook, in order: (call, instance, result)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def hold(self, session: Any, instance: str) -> None:
        session.client("autoscaling").put_lifecycle_hook(
            AutoScalingGroupName=GROUP,
            LifecycleHookName=JOIN_HOOK_NAME,
            LifecycleTransition="autoscaling:EC2_INSTANCE_LAUNCHING",
            HeartbeatTimeout=3600,
            DefaultResult="ABANDON",
        )
        self._state(instance).lifecycle_state = "Pending:Wait"

    def _state(self, instance: str) -> Any:
        backend = autoscaling_backends[DEFAULT_ACCOUNT_ID][REGION]
        for state in backend.autoscaling_groups[GROUP].instance_states:
            if state.instance.id == instance:
                return state
        raise KeyError(instance)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        wait = self

        def waiting(response: AutoScalingResponse) -> Any:
            group = response._get_param("AutoScalingGroupName")
            hook = response._get_param("LifecycleHookName")
            instance = response._get_param("InstanceId")
            if not response.autoscaling_backend.describe_lifecycle_hooks(group, [hook]):
                raise ValidationError(f"No Lifecycle Hook found with name {hook} on {group}")
            state = wait._state(instance)
            if state.lifecycle_state != "Pending:Wait":
                raise ValidationError(
                    f"No active Lifecycle Action found with instance ID {instance}"
                )
            return state

        def heartbeat(self: AutoScalingResponse) -> Any:
            state = waiting(self)
            wait.calls.append(("heartbeat", state.instance.id, ""))
            return EmptyResult()

        def complete(self: AutoScalingResponse) -> Any:
            state = waiting(self)
            result = self._get_param("LifecycleActionResult")
            wait.calls.append(("complete", state.instance.id, result))
            state.lifecycle_state = "InService" if result == "CONTINUE" else "Terminating"
            return EmptyResult()

        monkeypatch.setattr(
            AutoScalingResponse, "record_lifecycle_action_heartbeat", heartbeat, raising=False
        )
        monkeypatch.setattr(
            AutoScalingResponse, "complete_lifecycle_action", complete, raising=False
        )


class Slurmctld:
    """`scontrol show node` as slurmctld answers while the node registers: unknown, then not
    responding, then in service (after ``after`` calls; never if None)."""

    def __init__(self, after: int | None, wait: LaunchWait) -> None:
        self.after = after
        self.asked = 0
        self.wait = wait

    def __call__(self, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        assert cmd[:4] == ["scontrol", "--oneliner", "show", "node"] and cmd[4] == NAME
        self.asked += 1
        # Nothing is completed while the node is not registered.
        assert [c for c in self.wait.calls if c[0] == "complete"] == []
        if self.asked == 1:
            return subprocess.CompletedProcess(cmd, 1, "", f"Node {NAME} not found\n")
        if self.after is None or self.asked <= self.after:
            line = f"NodeName={NAME} Arch=x86_64 State=IDLE+DYNAMIC_NORM+NOT_RESPONDING Weight=1\n"
        else:
            line = f"NodeName={NAME} Arch=x86_64 State=IDLE+DYNAMIC_NORM Weight=1\n"
        return subprocess.CompletedProcess(cmd, 0, line, "")


@pytest.fixture
def wait(monkeypatch: pytest.MonkeyPatch) -> Iterator[LaunchWait]:
    launch = LaunchWait()
    launch.install(monkeypatch)
    yield launch


def node(tmp_path: Path, session: Any, instance: str, run: Any) -> Any:
    ctx = make_node(tmp_path, session, "train", run=run)
    ctx.write_node_env(NodeEnv(address="10.42.7.19", node_name=NAME, instance_id=instance))
    return ctx


def lifecycle_state(session: Any, instance: str) -> str:
    found = session.client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance])
    return str(found["AutoScalingInstances"][0]["LifecycleState"])


def test_the_instance_goes_in_service_once_its_node_has_joined(
    aws: Any, tmp_path: Path, wait: LaunchWait
) -> None:
    instance = asg_with_instance(aws)
    wait.hold(aws, instance)
    slurm = Slurmctld(after=3, wait=wait)
    result = joined(node(tmp_path, aws, instance, slurm), poll=1)
    assert result == {"node": NAME, "instance": instance, "completed": GROUP}
    assert slurm.asked == 4  # unknown, not responding twice, joined
    assert wait.calls == [("heartbeat", instance, ""), ("complete", instance, "CONTINUE")]
    assert lifecycle_state(aws, instance) == "InService"


def test_a_node_that_never_joins_fails_its_boot_and_completes_nothing(
    aws: Any, tmp_path: Path, wait: LaunchWait
) -> None:
    instance = asg_with_instance(aws)
    wait.hold(aws, instance)
    slurm = Slurmctld(after=None, wait=wait)
    with pytest.raises(AgentError, match=rf"node {NAME} has not joined Slurm within 10 s"):
        joined(node(tmp_path, aws, instance, slurm), timeout=10, poll=1)
    assert wait.calls == [("heartbeat", instance, "")]
    assert lifecycle_state(aws, instance) == "Pending:Wait"


def test_an_instance_in_no_launch_hook_only_waits_to_join(
    aws: Any, tmp_path: Path, wait: LaunchWait
) -> None:
    """An elastic node (in no group), or one the group put in service before the hook was
    made: it still waits for its node to join, and completes nothing."""
    instance = asg_with_instance(aws)  # InService: moto's own state
    slurm = Slurmctld(after=1, wait=wait)
    result = joined(node(tmp_path, aws, instance, slurm), poll=1)
    assert result["completed"] is None and wait.calls == []


def test_a_failed_boot_abandons_its_launch(
    aws: Any, tmp_path: Path, wait: LaunchWait, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = asg_with_instance(aws)
    wait.hold(aws, instance)
    root = tmp_path
    make_node(root, None, "train")
    instance_file = root / bootstrap.INSTANCE_ID_FILE.lstrip("/")
    instance_file.parent.mkdir(parents=True)
    instance_file.write_text(instance + "\n")
    argv = ["run", sys.executable, "-c", "import sys; sys.exit(3)"]
    assert bootstrap.main(argv, session=aws, root=str(root)) == 1
    assert wait.calls == [("complete", instance, "ABANDON")]
    assert "abandoned" in capsys.readouterr().err
