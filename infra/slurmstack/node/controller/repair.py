"""The repair rules of a pass: an out-of-service node's reason, its cause looked up in the
policy (reboot, replace or leave), a cause back after a reboot replaced instead, and the pool's
circuit breaker in front of every replacement (decide.py runs them for each such node)."""

from __future__ import annotations

from dataclasses import replace

from ...contract import (
    CONTROLLER_NOTES,
    HELD_NOTE,
    OPERATOR_ACTION,
    OPERATOR_CAUSE_PREFIX,
    REBOOTING_NOTE,
    REPLACING_NOTE,
    SLURM_CAUSE_PREFIX,
    PoolRef,
    Remedy,
    cause_of,
    parse_reason,
)
from ..slurm import SLURM_REASONS, NodeRecord
from .actions import Action, Kind, Pass, iso
from .observe import Instance, Member


def original(text: str) -> str:
    """A reason without what the controller appended to it (CONTROLLER_NOTES)."""
    for note in CONTROLLER_NOTES:
        text = text.split(note, 1)[0]
    return text.strip()


def cause_of_node(node: NodeRecord, users: frozenset[str]) -> str | None:
    """The repair table's key for a node's reason: an operator's request, a slurmstack check,
    or Slurm's own reason (stamped by SlurmUser); None for any other text."""
    text = node.reason
    asked = OPERATOR_ACTION.search(text)
    if asked:
        return f"{OPERATOR_CAUSE_PREFIX}{asked[1]}"
    for part in node.reasons:  # Slurm >= 23.02 stacks its own reasons onto ours
        parsed = parse_reason(part)
        if parsed is not None:
            return cause_of(*parsed)
    if node.reason_user in users:
        for part in node.reasons:
            if part in SLURM_REASONS:
                return f"{SLURM_CAUSE_PREFIX}{part}"
    return None


def repair_pass(
    run: Pass,
    node: NodeRecord,
    pool: PoolRef,
    instance: Instance | None,
    member: Member | None,
) -> None:
    """An out-of-service node: its reason's cause, looked up in the policy."""
    name, text = node.name, node.reason
    if REPLACING_NOTE in text or (member is not None and member.health_status != "Healthy"):
        return  # a replacement is under way
    cause = cause_of_node(node, run.observed.slurm_users)
    remedy = run.policy.remedy(cause) if cause is not None else None
    if remedy is None or remedy is Remedy.LEAVE:
        return
    why = f"{cause}: {remedy.value}"
    last = run.state.reboots.get(name)
    if remedy is Remedy.REBOOT and last is not None:
        remedy = Remedy.REPLACE
        why = f"{cause}: back within {run.policy.reboot_window_minutes} min of the reboot at {iso(last[0])}"
    if remedy is Remedy.REBOOT:
        run.add(Action(Kind.REBOOT, name, original(text) + REBOOTING_NOTE, why=why, pool=pool.name))
        run.state = replace(run.state, reboots={**run.state.reboots, name: (run.now, cause or "")})
        return
    if instance is None or member is None:
        run.notes.append(f"{name}: {why}, but its instance is in no group of the cluster: left")
        return
    if (
        cause is not None
        and cause.startswith(OPERATOR_CAUSE_PREFIX)
        and node.busy
        and node.base != "DOWN"
    ):
        return  # an operator's replacement waits for the node's jobs
    replace_pass(run, node, pool, instance, member, why)


def replace_pass(
    run: Pass,
    node: NodeRecord,
    pool: PoolRef,
    instance: Instance,
    member: Member,
    why: str,
) -> None:
    name, text, policy = node.name, node.reason, run.policy
    trip = run.state.breakers.get(pool.name)
    if trip is None and run.state.recent(pool.name, run.now, policy) >= policy.breaker_replacements:
        detail = (
            f"{policy.breaker_replacements} replacements in {policy.breaker_window_minutes} min"
        )
        run.state = run.state.trip(pool.name, run.now, detail)
        trip = run.state.breakers[pool.name]
        run.notes.append(f"pool {pool.name}: breaker tripped ({detail})")
        run.add(
            Action(
                Kind.SUSPEND,
                group=member.group,
                pool=pool.name,
                why=f"breaker tripped: {detail}; `slurmstack-node breaker reset {pool.name}`",
            )
        )
    if trip is not None:
        if HELD_NOTE not in text:
            held = (
                f"{original(text)}{HELD_NOTE}pool {pool.name}'s breaker is open since "
                f"{iso(trip.since)} ({trip.why}): `slurmstack-node breaker reset {pool.name}`"
            )
            run.add(Action(Kind.HOLD, name, held, pool=pool.name, why=why))
        return
    run.state = run.state.count(pool.name, instance.instance_id, run.now)
    run.add(
        Action(
            Kind.REPLACE,
            name,
            f"{original(text)}{REPLACING_NOTE}{instance.instance_id}",
            instance=instance.instance_id,
            group=member.group,
            pool=pool.name,
            why=why,
        )
    )
