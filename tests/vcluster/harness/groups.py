"""What an Auto Scaling group does that moto does not (stand-ins "asg-health", "asg-lifecycle").

moto keeps a group's lifecycle hooks but never waits in them, and has neither
RecordLifecycleActionHeartbeat nor CompleteLifecycleAction. ``LifecycleActions`` adds the two
calls to moto's Auto Scaling API (in this process: the nodes' calls and the harness's reach the
same backend), checking as AWS does that the instance waits in that hook of that group, and
records them. The group's own side (an instance starting to terminate, waiting in the hook,
going once its action is completed) is played by the harness (cluster.py ``settle_groups``)
with the functions below, in moto's own records.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from moto.autoscaling.exceptions import ValidationError
from moto.autoscaling.models import AutoScalingBackend, InstanceState, autoscaling_backends
from moto.autoscaling.responses import AutoScalingResponse
from moto.core.responses import EmptyResult

from .imds import ACCOUNT_ID

TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING"
WAIT = "Terminating:Wait"
PROCEED = "Terminating:Proceed"


class LifecycleActions:
    """The calls the nodes and the head make, as recorded: heartbeats and completions by
    instance id (unique across the clusters of a run, so one record serves them all)."""

    def __init__(self) -> None:
        self.heartbeats: Counter[str] = Counter()
        self.completed: dict[str, str] = {}  # instance id -> CONTINUE or ABANDON

    def install(self) -> None:
        """moto's Auto Scaling API gets the two calls (again: the same ones)."""
        actions = self

        def waiting(response: AutoScalingResponse) -> InstanceState:
            group = response._get_param("AutoScalingGroupName")
            hook = response._get_param("LifecycleHookName")
            instance = response._get_param("InstanceId")
            backend: AutoScalingBackend = response.autoscaling_backend
            if not backend.describe_lifecycle_hooks(group, [hook]):
                raise ValidationError(f"No Lifecycle Hook found with name {hook} on {group}")
            state = member(backend, instance)
            if (
                state is None
                or state.lifecycle_state != WAIT
                or state.auto_scaling_group_name != group
            ):
                raise ValidationError(
                    f"No active Lifecycle Action found with instance ID {instance}"
                )
            return state

        def record_lifecycle_action_heartbeat(self: AutoScalingResponse) -> Any:
            state = waiting(self)
            actions.heartbeats[state.instance_id] += 1
            return EmptyResult()

        def complete_lifecycle_action(self: AutoScalingResponse) -> Any:
            state = waiting(self)
            actions.completed[state.instance_id] = self._get_param("LifecycleActionResult")
            state.lifecycle_state = PROCEED
            return EmptyResult()

        AutoScalingResponse.record_lifecycle_action_heartbeat = record_lifecycle_action_heartbeat  # type: ignore[attr-defined]
        AutoScalingResponse.complete_lifecycle_action = complete_lifecycle_action  # type: ignore[attr-defined]


def backend(region: str) -> AutoScalingBackend:
    found: AutoScalingBackend = autoscaling_backends[ACCOUNT_ID][region]
    return found


def member(backend: AutoScalingBackend, instance_id: str) -> InstanceState | None:
    for group in backend.autoscaling_groups.values():
        for state in group.instance_states:
            if state.instance.id == instance_id:
                return state
    return None


def has_drain_hook(backend: AutoScalingBackend, group: str) -> bool:
    return any(
        h.lifecycle_transition == TERMINATING for h in backend.describe_lifecycle_hooks(group)
    )


def replaces_unhealthy(backend: AutoScalingBackend, group: str) -> bool:
    processes = backend.autoscaling_groups[group].suspended_processes
    return "ReplaceUnhealthy" not in {p["ProcessName"] for p in processes}


# The one record of a run.
ACTIONS = LifecycleActions()
