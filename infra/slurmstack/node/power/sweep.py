"""The sweep of the elastic nodes (slurmstack-power.timer, as SlurmUser): return to service
the powered-down nodes that a failed launch (once their pool's retry is due), a health check or
Slurm itself took out, and terminate the instances no node owns.

Which powered-down DOWN or DRAINED node is returned (sweep_verdict): one whose reason is a
launch failure (``slurmstack:launch: ...``) when its pool's retry is due; one whose reason is
another of slurmstack's (a health check drained it: its instance was terminated at power down,
the next job gets a fresh one) or one of Slurm's own ("Not responding", "ResumeTimeout
reached"): at once. An operator's reason keeps the node out.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from ...contract import Check, is_our_reason, parse_reason
from ..context import Context, log
from ..slurm import SLURM_REASONS, NodeRecord
from . import nodes
from .retry import RetryState

# Slurm's own reasons for an elastic node it gave up on, besides the reaper's list.
POWER_REASONS = frozenset({"ResumeTimeout reached", "Node unexpectedly rebooted"})
# An instance the resume program launched but could not name (it died between CreateFleet and
# CreateTags), or one running for a powered-down node, is terminated this long after launch:
# a resume under way names its instances and sets their nodes powering up within seconds.
ORPHAN_GRACE_SECONDS = 600


def sweep_verdict(record: NodeRecord, retry_due: bool) -> str | None:
    """None when the node goes back to service, else why it stays as it is."""
    if not record.powered_down:
        return "not powered down"
    if record.base != "DOWN" and "DRAIN" not in record.flags:
        return "available"
    parts = record.reasons
    if not parts:
        return "no reason"
    if any((parse_reason(p) or ("", ""))[0] == Check.LAUNCH for p in parts):
        return None if retry_due else "its pool's launch retry is not due"
    if all(is_our_reason(p) or p in SLURM_REASONS | POWER_REASONS for p in parts):
        return None
    return "an operator's reason: left for the operator"


def sweep(ctx: Context, dry_run: bool = False) -> dict[str, Any]:
    config = ctx.config()
    pools = config.elastic_pools
    now = float(ctx.clock())
    state = RetryState.load(ctx)
    found = nodes.records(ctx, pools)
    back: list[str] = []
    kept: dict[str, str] = {}
    for name, record in sorted(found.items()):
        pool = nodes.pool_of(name, pools)
        assert pool is not None
        verdict = sweep_verdict(record, state.due(pool.name, now))
        if verdict is None:
            back.append(name)
        elif verdict not in ("not powered down", "available"):
            kept[name] = verdict
    stray = stray_instances(nodes.instances(ctx, config.cluster), found, now)
    result: dict[str, Any] = {
        "returned": back,
        "kept": kept,
        "terminated": {i: why for i, why in stray.items()},
    }
    if dry_run:
        return result
    if back:
        log(f"returning to service: {', '.join(back)}")
        nodes.return_to_service(ctx, back)
    if stray:
        for instance, why in sorted(stray.items()):
            nodes.terminate(ctx, [instance], why)
    return result


def stray_instances(
    launched: Iterable[nodes.Instance], found: dict[str, NodeRecord], now: float
) -> dict[str, str]:
    """Of the instances the power programs launched, those no elastic node owns: instance id ->
    why (a pure function of the instances, the nodes' records and the time)."""
    stray = {}
    for instance in launched:
        age = now - instance.launched.astimezone(datetime.UTC).timestamp()
        record = found.get(instance.node or "")
        if instance.node is None:
            if age > ORPHAN_GRACE_SECONDS:
                stray[instance.instance_id] = "launched but never named (its resume died)"
        elif record is None:
            stray[instance.instance_id] = f"{instance.node} is no elastic node of the cluster"
        elif record.powered_down and age > ORPHAN_GRACE_SECONDS:
            stray[instance.instance_id] = f"{instance.node} is powered down"
        elif (record.address or None) not in (
            instance.address,
            None,
        ) and age > ORPHAN_GRACE_SECONDS:
            stray[instance.instance_id] = (
                f"{instance.node} runs at {record.address}, not at {instance.address}"
            )
    return stray
