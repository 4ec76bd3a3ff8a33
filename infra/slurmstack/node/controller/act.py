"""act: carry out a pass's actions, each bounded (scontrol and AWS calls time out; a pass takes
at most decide.MAX_ACTIONS) and idempotent (doing one twice changes nothing more), and record
each, done or failed, as one JSON line in the controller's log (and on stderr, for the journal).
"""

from __future__ import annotations

import json
import time
from typing import Any

from ...contract import CONTROLLER_LOG_PATH, DRAIN_HOOK_NAME
from ..context import Context, log
from .actions import SUSPENDED_PROCESS, Action, Kind

SCONTROL_SECONDS = 30


def scontrol(ctx: Context, *args: str) -> None:
    result = ctx.bounded(SCONTROL_SECONDS, "scontrol", *args)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout or "").strip()
        raise RuntimeError(f"scontrol {' '.join(args)}: {detail or f'exit {result.returncode}'}")


def act_one(ctx: Context, action: Action) -> None:
    node = f"nodename={action.node}"
    if action.kind is Kind.DRAIN:
        scontrol(ctx, "update", node, "state=drain", f"reason={action.reason}")
    elif action.kind is Kind.DOWN:
        scontrol(ctx, "update", node, "state=down", f"reason={action.reason}")
    elif action.kind is Kind.HOLD:
        scontrol(ctx, "update", node, f"reason={action.reason}")
    elif action.kind is Kind.REBOOT:
        scontrol(ctx, "reboot", "ASAP", "nextstate=RESUME", f"reason={action.reason}", action.node)
    elif action.kind is Kind.REAP:
        scontrol(ctx, "delete", node)
    elif action.kind is Kind.REPLACE:
        # DOWN first: its jobs requeue now, not when the instance is gone.
        scontrol(ctx, "update", node, "state=down", f"reason={action.reason}")
        ctx.aws.autoscaling().set_instance_health(
            InstanceId=action.instance, HealthStatus="Unhealthy", ShouldRespectGracePeriod=False
        )
    elif action.kind is Kind.HEARTBEAT:
        ctx.aws.autoscaling().record_lifecycle_action_heartbeat(
            AutoScalingGroupName=action.group,
            LifecycleHookName=DRAIN_HOOK_NAME,
            InstanceId=action.instance,
        )
    elif action.kind is Kind.COMPLETE:
        ctx.aws.autoscaling().complete_lifecycle_action(
            AutoScalingGroupName=action.group,
            LifecycleHookName=DRAIN_HOOK_NAME,
            InstanceId=action.instance,
            LifecycleActionResult="CONTINUE",
        )
    elif action.kind is Kind.SUSPEND:
        ctx.aws.autoscaling().suspend_processes(
            AutoScalingGroupName=action.group, ScalingProcesses=[SUSPENDED_PROCESS]
        )


def entry(ctx: Context, action: Action, error: str | None) -> dict[str, Any]:
    fields = {k: v for k, v in vars(action).items() if v}
    fields["action"] = fields.pop("kind").value
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ctx.clock()))
    return {"time": stamp, **fields, "ok": error is None, **({"error": error} if error else {})}


def record(ctx: Context, line: dict[str, Any]) -> None:
    path = ctx.path(CONTROLLER_LOG_PATH)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(json.dumps(line, sort_keys=True) + "\n")
    log("control: " + json.dumps(line, sort_keys=True))


def act(ctx: Context, actions: tuple[Action, ...]) -> list[dict[str, Any]]:
    done = []
    for action in actions:
        error = None
        try:
            act_one(ctx, action)
        except Exception as exc:  # one failure must not stop the others; it is logged
            error = str(exc)
        line = entry(ctx, action, error)
        record(ctx, line)
        done.append(line)
    return done
