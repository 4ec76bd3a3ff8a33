"""decide: from what one pass observed (Slurm and AWS), the policy and the controller's memory,
the actions to take and the memory after them. A pure function (no clock, no I/O), so the
rules below are tested as a table (tests/unit/node/controller/test_decide.py).

Per node of the cluster's pools, by its observed state:
- a node the power-saving programs look after (powered down, powering up or down, FUTURE) is
  theirs: left alone;
- no live instance of the cluster at its address: set DOWN at once (its jobs requeue), with
  `slurmstack:instance-gone:`; its record is deleted after the grace period (reaped);
- its instance is terminating in its group (scale-in, refresh, replacement): drained, the
  lifecycle action kept alive while its jobs run (at most scale_in_wait_minutes), completed
  once they ended and its logs reached the bucket (or logs_wait_minutes passed);
- in a Capacity Block that ends soon: drained ahead of EC2's terminations;
- out of service with a reason: the reason's cause (an operator's Action:Replace/Reboot, a
  `slurmstack:<check>:`, Slurm's own) looked up in the policy's table: reboot, replace or
  leave. A cause back within reboot_window_minutes of a reboot is replaced instead. A
  replacement passes the pool's breaker first: past breaker_replacements in
  breaker_window_minutes it trips, the pool's replacements stop (its group's ReplaceUnhealthy
  process suspended too) and the nodes waiting say so in their reason, until an operator resets
  it. An operator's Action:Replace waits for the node's jobs; a fault found by a check does not
  (the node is set DOWN, its jobs requeue).
Everything else is left for an operator.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import replace

from ...contract import (
    REAPER_GRACE_SECONDS,
    REPLACING_NOTE,
    SLURM_REASON_SEPARATOR,
    Check,
    PoolRef,
    RepairPolicy,
    is_node_name_of,
    parse_reason,
    reason,
)
from ..slurm import NodeRecord
from .actions import MAX_ACTIONS, SUSPENDED_PROCESS, Action, Decision, Kind, Pass, iso
from .observe import CAPACITY_BLOCK, TERMINATING_WAIT, Instance, Member, Observed
from .reap import reap_verdict
from .repair import cause_of_node, original, repair_pass
from .state import ControllerState, Waiting

# EC2 starts terminating a Capacity Block's instances 30 minutes before its end (EC2 User
# Guide, "Monitor Capacity Blocks using EventBridge": forty minutes before the end, instances
# "will begin to terminate in 10 minutes").
CAPACITY_BLOCK_TERMINATION_LEAD = 30 * 60
DIGITS = string.digits


def pool_of(name: str, pools: tuple[PoolRef, ...]) -> PoolRef | None:
    return next((p for p in pools if is_node_name_of(name, p.node_name_prefix)), None)


def pool_finder(pools: tuple[PoolRef, ...]) -> Callable[[str], PoolRef | None]:
    """pool_of for every node of a pass (thousands of nodes, up to a hundred pools): a node's
    name is its pool's prefix and an index, so the prefix is looked up with the index cut off
    (where a prefix ends in a digit, which the naming scheme's never do, every pool is
    searched, as pool_of does)."""
    if any(p.node_name_prefix[-1:].isdigit() for p in pools):
        return lambda name: pool_of(name, pools)
    by_prefix = {p.node_name_prefix: p for p in reversed(pools)}  # the first pool wins

    def find(name: str) -> PoolRef | None:
        pool = by_prefix.get(name.rstrip(DIGITS))
        return pool if pool is not None and is_node_name_of(name, pool.node_name_prefix) else None

    return find


def decide(
    observed: Observed, pools: tuple[PoolRef, ...], policy: RepairPolicy, state: ControllerState
) -> Decision:
    terminating = {m.instance_id for m in observed.members if m.lifecycle_state == TERMINATING_WAIT}
    run = Pass(observed, pools, policy, state.pruned(observed.now, policy, terminating), [], [])
    by_group = {p.group: p for p in pools}
    for seen in observed.members:  # the group's own replacements count for the breaker too
        if seen.health_status == "Unhealthy" and seen.pool:
            run.state = run.state.count(seen.pool, seen.instance_id, run.now)
    if observed.aws:
        for pool in pools:
            suspended = observed.suspended.get(pool.group, frozenset())
            if pool.name in run.state.breakers and SUSPENDED_PROCESS not in suspended:
                why = f"pool {pool.name}'s breaker is open: its group stops replacing instances"
                run.add(Action(Kind.SUSPEND, group=pool.group, pool=pool.name, why=why))
    handled: set[str] = set()
    owner_of = pool_finder(pools)
    for node in observed.nodes:
        owner = owner_of(node.name)
        if owner is None or node.power_saving:
            continue
        instance = observed.instance_at(node.address) if observed.aws else None
        member = observed.member(instance.instance_id) if instance else None
        if instance is not None:
            handled.add(instance.instance_id)
        node_pass(run, node, owner, instance, member)
    for waiting in observed.members:  # terminating instances whose node never registered
        group_pool = by_group.get(waiting.group)
        unregistered = waiting.instance_id not in handled and group_pool is not None
        if waiting.lifecycle_state == TERMINATING_WAIT and unregistered:
            assert group_pool is not None
            terminating_pass(run, None, group_pool, waiting)
    kept, dropped = run.actions[:MAX_ACTIONS], run.actions[MAX_ACTIONS:]
    if dropped:
        run.notes.append(f"{len(dropped)} actions left for the next pass (at most {MAX_ACTIONS})")
    return Decision(tuple(kept), run.state, tuple(run.notes))


def node_pass(
    run: Pass,
    node: NodeRecord,
    pool: PoolRef,
    instance: Instance | None,
    member: Member | None,
) -> None:
    name, observed = node.name, run.observed
    if observed.aws and instance is None:
        gone_pass(run, node, pool)
        return
    if member is not None and member.lifecycle_state == TERMINATING_WAIT:
        terminating_pass(run, node, pool, member)
        return
    out = node.out_of_service
    end = observed.reservation_ends.get(pool.reservation_id)
    if pool.capacity_type == CAPACITY_BLOCK and end is not None and not out:
        terminate_from = end - CAPACITY_BLOCK_TERMINATION_LEAD
        if run.now >= terminate_from - run.policy.capacity_block_drain_minutes * 60:
            detail = (
                f"{pool.reservation_id} ends {iso(end)}: EC2 terminates its instances from "
                f"{iso(terminate_from)}"
            )
            run.add(Action(Kind.DRAIN, name, reason(Check.CAPACITY_BLOCK_END, detail)))
            return
    if out and not node.rebooting:
        repair_pass(run, node, pool, instance, member)


def gone_pass(run: Pass, node: NodeRecord, pool: PoolRef) -> None:
    """No live instance at the node's address: DOWN now, reaped after the grace period."""
    name, observed = node.name, run.observed
    verdict = reap_verdict(
        node, run.pools, set(observed.slurm_users), run.now, float(REAPER_GRACE_SECONDS)
    )
    if verdict is None:
        run.add(Action(Kind.REAP, name, why="no live instance at its address; DOWN long enough"))
        return
    old = node.reason
    parsed = parse_reason(original(old))
    if parsed is not None and parsed[0] == Check.INSTANCE_GONE:
        return
    detail = f"no live instance of the cluster at {node.address or '?'}"
    if node.base != "DOWN":
        ours = (
            not old or parsed is not None or cause_of_node(node, observed.slurm_users) is not None
        )
        text = reason(Check.INSTANCE_GONE, detail + (f" (was: {old})" if old else ""))
        # An operator's reason stays first (and keeps the record for the operator).
        run.add(Action(Kind.DOWN, name, text if ours else f"{old}{SLURM_REASON_SEPARATOR}{text}"))
    elif parsed is not None or REPLACING_NOTE in old:
        # DOWN for one of the controller's reasons, or for a cause the controller has replaced
        # (an operator's Action:Replace: Slurm may mark the node DOWN, not responding, before
        # a pass sees its instance gone): now it is gone, and its record is the reaper's.
        run.add(Action(Kind.DOWN, name, reason(Check.INSTANCE_GONE, f"{detail} (was: {old})")))


def terminating_pass(run: Pass, node: NodeRecord | None, pool: PoolRef, member: Member) -> None:
    """The group is terminating the instance and its lifecycle hook holds it for us."""
    iid, policy = member.instance_id, run.policy
    waiting = run.state.terminating.get(iid) or Waiting(run.now)
    working = node is not None and node.busy and node.base != "DOWN"
    if not working and waiting.idle_since is None:
        waiting = replace(waiting, idle_since=run.now)
    run.state = replace(run.state, terminating={**run.state.terminating, iid: waiting})
    ids = {"instance": iid, "group": member.group, "pool": pool.name}
    if node is not None and not node.out_of_service:
        detail = (
            f"{member.group} is terminating {iid}: draining; its jobs get up to "
            f"{policy.scale_in_wait_minutes} min"
        )
        run.add(Action(Kind.DRAIN, node.name, reason(Check.SCALE_IN, detail), **ids))
    waited = run.now - waiting.since
    if working and waited < policy.scale_in_wait_minutes * 60:
        run.add(Action(Kind.HEARTBEAT, why="its node still runs jobs", **ids))
        return
    unreachable = node is None or "NOT_RESPONDING" in node.states
    logs_in = iid in run.observed.logs_shipped or unreachable
    idle_for = run.now - (waiting.idle_since if waiting.idle_since is not None else run.now)
    if not working and not logs_in and idle_for < policy.logs_wait_minutes * 60:
        run.add(Action(Kind.HEARTBEAT, why="waiting for its logs to reach the bucket", **ids))
        return
    why = "its node has no job" if not working else f"jobs still ran after {waited / 60:.0f} min"
    why += "; logs in the bucket" if iid in run.observed.logs_shipped else "; no logs"
    run.add(Action(Kind.COMPLETE, node=node.name if node else "", why=why, **ids))
