"""The sweep of the elastic nodes (slurmstack-power.timer, as SlurmUser): return to service
the powered-down nodes that a failed launch (once their pool's retry is due), a health check or
Slurm itself took out, and terminate the instances no node owns.

Which powered-down DOWN or DRAINED node is returned (sweep_verdict): one whose reason is a
launch failure (``slurmstack:launch: ...``) when its pool's retry is due; one whose reason is
another of slurmstack's (a health check drained it: its instance was terminated at power down,
the next job gets a fresh one) or one of Slurm's own ("Not responding", "ResumeTimeout
reached"): at once. An operator's reason keeps the node out.

Which instance is terminated (stray_instances): one no elastic node runs on (by address) once
its grace has passed, and one of a node a max_count decrease took out of the definition once
that node runs no job (the node is drained first).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from ...contract import ORPHAN_GRACE_SECONDS, Check, is_our_reason, parse_reason, reason
from ..context import Context, log
from ..slurm import SLURM_REASONS, NodeRecord
from . import nodes
from .retry import RetryState

# Slurm's own reasons for an elastic node it gave up on, besides the reaper's list.
POWER_REASONS = frozenset({"ResumeTimeout reached", "Node unexpectedly rebooted"})


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
    found = nodes.elastic_records(ctx, pools)
    removed = {n for n in found if nodes.pool_of(n, pools) is None}
    back: list[str] = []
    kept: dict[str, str] = {}
    for name, record in sorted(found.items()):
        pool = nodes.pool_of(name, pools)
        if pool is None:
            continue
        verdict = sweep_verdict(record, state.due(pool.name, now))
        if verdict is None:
            back.append(name)
        elif verdict not in ("not powered down", "available"):
            kept[name] = verdict
    launched = nodes.instances(ctx, config.cluster)
    stray, drain = stray_instances(launched, found, removed, now, config.orphan_grace_seconds)
    result: dict[str, Any] = {
        "returned": back,
        "kept": kept,
        "drained": drain,
        "terminated": dict(stray),
    }
    if dry_run:
        return result
    if back:
        log(f"returning to service: {', '.join(back)}")
        nodes.return_to_service(ctx, back)
    for name, why in sorted(drain.items()):
        nodes.drain(ctx, [name], why)
    for why in sorted(set(stray.values())):
        nodes.terminate(ctx, sorted(i for i, w in stray.items() if w == why), why)
    return result


def stray_instances(
    launched: Iterable[nodes.Instance],
    found: dict[str, NodeRecord],
    removed: set[str],
    now: float,
    grace: float = ORPHAN_GRACE_SECONDS,
) -> tuple[dict[str, str], dict[str, str]]:
    """(instance id -> why it is terminated, node -> why it is drained first): a pure function
    of the instances the power programs launched, Slurm's records of the elastic nodes (those
    ``removed`` from the definition among them) and the time.

    An instance belongs to the node whose address it has, unless that node is powered down: a
    resume sets the address within seconds of the launch, so an instance no node has is
    terminated once ``grace`` has passed since its launch. A node a max_count decrease took out
    of the definition, which Slurm still holds, is drained while a job runs on it, and its
    instance terminated only once it runs none."""
    owners = {
        r.address: r
        for r in found.values()
        if r.address and r.address != r.name and not r.powered_down
    }
    stray: dict[str, str] = {}
    drain: dict[str, str] = {}
    for instance in launched:
        owner = owners.get(instance.address or "")
        age = now - instance.launched.astimezone(datetime.UTC).timestamp()
        if owner is None:
            if age > grace:
                stray[instance.instance_id] = (
                    f"no elastic node runs at {instance.address} ({int(age)} s after its launch)"
                )
        elif owner.name in removed:
            if not owner.busy:
                stray[instance.instance_id] = f"{owner.name} left the definition and is idle"
            elif "DRAIN" not in owner.flags:
                drain[owner.name] = reason(
                    Check.SCALE_IN,
                    f"{owner.name} left the definition (its pool's max_count): drained, its "
                    "instance terminated once its jobs end",
                )
    return stray, drain
