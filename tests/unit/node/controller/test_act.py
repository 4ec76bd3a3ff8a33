"""act: each action is one bounded call (scontrol, or Auto Scaling), carried out even when an
earlier one failed, and recorded as a JSON line in the controller's log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from slurmstack.contract import CONTROLLER_LOG_PATH, DRAIN_HOOK_NAME
from slurmstack.node.controller.act import act
from slurmstack.node.controller.actions import Action, Kind
from support.node import Answers, make_node


class Recorder:
    """An AWS client that records its calls."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.calls = calls

    def __getattr__(self, name: str):
        def call(**kwargs: Any) -> dict[str, Any]:
            self.calls.append((name, kwargs))
            return {}

        return call


class Session:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def client(self, _service: str, region_name: str = "", config: object = None) -> Recorder:
        return Recorder(self.calls)


def test_each_action_is_its_call(tmp_path: Path) -> None:
    run = Answers()
    session = Session()
    node = make_node(tmp_path, session, "head", run=run)
    actions = (
        Action(Kind.DRAIN, "gpu-1", "slurmstack:scale-in: x"),
        Action(Kind.DOWN, "gpu-2", "slurmstack:instance-gone: y"),
        Action(Kind.REBOOT, "gpu-3", "slurmstack:gpu-xid: 63 z; rebooting"),
        Action(Kind.REAP, "gpu-4"),
        Action(Kind.HOLD, "gpu-5", "r; held: pool gpu's breaker"),
        Action(Kind.REPLACE, "gpu-6", "r; replacing i-6", instance="i-6", group="g"),
        Action(Kind.HEARTBEAT, instance="i-7", group="g"),
        Action(Kind.COMPLETE, instance="i-8", group="g"),
        Action(Kind.SUSPEND, group="g", pool="gpu"),
    )
    done = act(node, actions)
    assert all(line["ok"] for line in done)
    assert run.calls == [
        ["scontrol", "update", "nodename=gpu-1", "state=drain", "reason=slurmstack:scale-in: x"],
        ["scontrol", "update", "nodename=gpu-2", "state=down",
         "reason=slurmstack:instance-gone: y"],
        ["scontrol", "reboot", "ASAP", "nextstate=RESUME",
         "reason=slurmstack:gpu-xid: 63 z; rebooting", "gpu-3"],
        ["scontrol", "delete", "nodename=gpu-4"],
        ["scontrol", "update", "nodename=gpu-5", "reason=r; held: pool gpu's breaker"],
        ["scontrol", "update", "nodename=gpu-6", "state=down", "reason=r; replacing i-6"],
    ]  # fmt: skip
    hook = {"AutoScalingGroupName": "g", "LifecycleHookName": DRAIN_HOOK_NAME}
    assert session.calls == [
        ("set_instance_health",
         {"InstanceId": "i-6", "HealthStatus": "Unhealthy", "ShouldRespectGracePeriod": False}),
        ("record_lifecycle_action_heartbeat", {**hook, "InstanceId": "i-7"}),
        ("complete_lifecycle_action",
         {**hook, "InstanceId": "i-8", "LifecycleActionResult": "CONTINUE"}),
        ("suspend_processes", {"AutoScalingGroupName": "g", "ScalingProcesses": ["ReplaceUnhealthy"]}),
    ]  # fmt: skip
    lines = (tmp_path / CONTROLLER_LOG_PATH.lstrip("/")).read_text().splitlines()
    assert [json.loads(line)["action"] for line in lines] == [a.kind.value for a in actions]


def test_a_failed_action_is_logged_and_the_rest_go_on(tmp_path: Path) -> None:
    run = Answers({("scontrol", "reboot"): (1, "Invalid node name specified")})
    node = make_node(tmp_path, Session(), "head", run=run)
    done = act(node, (Action(Kind.REBOOT, "gpu-9", "r"), Action(Kind.DRAIN, "gpu-1", "s")))
    assert [d["ok"] for d in done] == [False, True]
    assert "Invalid node name" in done[0]["error"]
    assert run.calls[-1][:3] == ["scontrol", "update", "nodename=gpu-1"]
