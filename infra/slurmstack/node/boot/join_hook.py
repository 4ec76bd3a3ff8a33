"""joined: a pool node's last boot step. It waits until slurmctld has this node registered and
responding, then lets the instance's Auto Scaling group put it in service by completing the
launch lifecycle action (JOIN_HOOK_NAME) with CONTINUE.

Why: an instance refresh counts each new instance's warm-up from the moment it is InService
(EC2 Auto Scaling API Reference, RefreshPreferences, InstanceWarmup). Without the hook that is
the end of the EC2 launch, minutes before the node runs a job; with it, InService means "joined
Slurm", so the refresh's batches, checkpoints and rollback judge nodes that work. An instance
waits in the hook in Pending:Wait (EC2 Auto Scaling User Guide, "How lifecycle hooks work");
one that the group launched before the hook existed, or an elastic node (in no group), is
simply not waiting there: the step still waits for the node to join, as a boot that ends
without its node in Slurm has failed.

A failed boot completes the action with ABANDON (slurmstack-bootstrap's failure path): the
group terminates the instance and launches another, and a refresh counts it as a failed
replacement."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ...contract import JOIN_HOOK_NAME, Command
from ..context import AgentError, Context, log
from ..slurm import parse_node_line
from ..subcommand import Subcommand

# How long a node waits for slurmctld to have it (registration takes seconds; slurmd started
# just before, after the boot health check).
JOIN_WAIT_SECONDS = 600.0
POLL_SECONDS = 5.0
WAITING = "Pending:Wait"
# State bases and flags of a node slurmctld does not (yet) count on.
NOT_JOINED_BASES = {"UNKNOWN", "FUTURE", "INVAL"}
NOT_JOINED_FLAGS = {"NOT_RESPONDING", "POWERING_UP", "POWERED_DOWN"}


def registration(ctx: Context, name: str) -> tuple[bool, str]:
    """(joined, what slurmctld says of ``name``)."""
    result = ctx.sh("scontrol", "--oneliner", "show", "node", name, check=False)
    lines = result.stdout.splitlines()
    if result.returncode != 0 or not lines:
        return False, (result.stderr.strip() or "unknown to slurmctld")
    state = parse_node_line(lines[0]).get("State", "")
    base, *flags = state.split("+")
    # scontrol marks a node that does not answer with a trailing "*" on some releases.
    if base.rstrip("*") in NOT_JOINED_BASES or base.endswith("*") or NOT_JOINED_FLAGS & set(flags):
        return False, f"State={state}"
    return True, f"State={state}"


def waiting_group(ctx: Context, instance: str) -> str | None:
    """The group whose launch hook holds ``instance``, or None (not waiting, in no group)."""
    found = ctx.aws.autoscaling().describe_auto_scaling_instances(InstanceIds=[instance])
    for item in found.get("AutoScalingInstances", []):
        if item.get("LifecycleState") == WAITING:
            return str(item["AutoScalingGroupName"])
    return None


def _lifecycle(ctx: Context, call: str, group: str, instance: str, **extra: Any) -> None:
    getattr(ctx.aws.autoscaling(), call)(
        AutoScalingGroupName=group, LifecycleHookName=JOIN_HOOK_NAME, InstanceId=instance, **extra
    )


def joined(
    ctx: Context, timeout: float = JOIN_WAIT_SECONDS, poll: float = POLL_SECONDS
) -> dict[str, Any]:
    env = ctx.node_env()
    name = env.node_name
    if not name:
        raise AgentError("node.env has no node name: run `slurmstack-node params` first")
    instance = env.instance_id or ctx.imds("instance-id")
    group = waiting_group(ctx, instance)
    if group is not None:
        # The wait below starts the hook's heartbeat timeout over.
        _lifecycle(ctx, "record_lifecycle_action_heartbeat", group, instance)
    waited = 0.0
    ok, said = registration(ctx, name)
    while not ok:
        if waited >= timeout:
            raise AgentError(
                f"node {name} has not joined Slurm within {timeout:.0f} s ({said}): see slurmd's "
                "log (/var/log/slurm/slurmd.log) and slurmctld's on the head"
            )
        ctx.sleep(poll)
        waited += poll
        ok, said = registration(ctx, name)
    log(f"joined: {name} is registered ({said}) after {waited:.0f} s")
    if group is None:
        log(f"joined: {instance} waits in no launch hook: nothing to complete")
        return {"node": name, "instance": instance, "completed": None}
    _lifecycle(ctx, "complete_lifecycle_action", group, instance, LifecycleActionResult="CONTINUE")
    log(f"joined: {instance} may go InService in {group} (launch hook {JOIN_HOOK_NAME} completed)")
    return {"node": name, "instance": instance, "completed": group}


def _joined(ctx: Context, _args: argparse.Namespace) -> int:
    print(json.dumps(joined(ctx), sort_keys=True))
    return 0


# The row of slurmstack.node.commands' table, as Subcommand takes it.
COMMAND = Subcommand(
    Command.JOINED,
    "(last boot step) wait until slurmctld has this node registered and responding, then "
    "complete its Auto Scaling group's launch lifecycle hook (CONTINUE): the instance goes "
    "InService, and an instance refresh counts its warm-up, only once its node has joined "
    "Slurm; fails after 10 minutes",
    _joined,
    where="worker",
)
