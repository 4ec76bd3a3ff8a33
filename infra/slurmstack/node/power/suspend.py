"""SuspendProgram and ResumeFailProgram: terminate the instances of elastic nodes slurmctld
powers down (idle past their SuspendTime), or gave up on (not registered within ResumeTimeout;
their pool then waits before it launches again, as after a failed launch)."""

from __future__ import annotations

from typing import Any

from ...contract import Check, reason
from ..context import Context, log
from . import nodes
from .retry import RetryState


def suspend(ctx: Context, hostlist: str) -> dict[str, Any]:
    config = ctx.config()
    names = nodes.expand(ctx, hostlist)
    log(f"suspend {hostlist}: {len(names)} node(s)")
    grouped, strangers = nodes.by_pool(names, config.elastic_pools)
    for name in strangers:
        log(f"{name} is no elastic node of this cluster: nothing to terminate")
    wanted = [n for group in grouped.values() for n in group]
    found = nodes.instances(ctx, config.cluster, wanted) if wanted else []
    if found:
        nodes.terminate(ctx, [i.instance_id for i in found], "powered down by Slurm")
    return {"terminated": {i.node: i.instance_id for i in found}}


def resume_fail(ctx: Context, hostlist: str) -> dict[str, Any]:
    """Nodes slurmctld marked DOWN ("ResumeTimeout reached"): their instances are terminated,
    their reason says which instance failed, their pool's next launch waits."""
    config = ctx.config()
    names = nodes.expand(ctx, hostlist)
    log(f"resume failed {hostlist}: {len(names)} node(s)")
    grouped, _ = nodes.by_pool(names, config.elastic_pools)
    wanted = [n for group in grouped.values() for n in group]
    found = nodes.instances(ctx, config.cluster, wanted) if wanted else []
    if found:
        nodes.terminate(ctx, [i.instance_id for i in found], "did not register in time")
    by_node = {i.node: i.instance_id for i in found}
    state = RetryState.load(ctx)
    now = float(ctx.clock())
    for pool_name, group in grouped.items():
        why = ""
        for name in group:
            instance = by_node.get(name, "its instance")
            why = reason(Check.LAUNCH, f"{instance} did not register within ResumeTimeout")
            # Slurm has powered them down already: only the reason changes.
            nodes.take_down(ctx, [name], why, power_down=False)
        state.failed(pool_name, why, now, config.launch_retry)
    state.save(ctx)
    return {"terminated": by_node}
