"""SuspendProgram and ResumeFailProgram: terminate the instances of elastic nodes slurmctld
powers down (idle past their SuspendTime), or gave up on (not registered within ResumeTimeout;
their pool then waits before it launches again, as after a failed launch). A node's instance is
the elastic instance at the address Slurm has for it (slurmctld keeps it until SuspendTimeout
has passed); one that cannot be found is the sweep's to terminate."""

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
    found = _instances(ctx, config.cluster, config.elastic_pools, wanted)
    if found:
        nodes.terminate(ctx, [i.instance_id for i in found.values()], "powered down by Slurm")
    return {"terminated": {n: i.instance_id for n, i in found.items()}}


def resume_fail(ctx: Context, hostlist: str) -> dict[str, Any]:
    """Nodes slurmctld marked DOWN ("ResumeTimeout reached"): their instances are terminated,
    their reason says which instance failed, their pool's next launch waits."""
    config = ctx.config()
    names = nodes.expand(ctx, hostlist)
    log(f"resume failed {hostlist}: {len(names)} node(s)")
    grouped, _ = nodes.by_pool(names, config.elastic_pools)
    wanted = [n for group in grouped.values() for n in group]
    found = _instances(ctx, config.cluster, config.elastic_pools, wanted)
    if found:
        nodes.terminate(ctx, [i.instance_id for i in found.values()], "did not register in time")
    by_node = {n: i.instance_id for n, i in found.items()}
    for name, instance in sorted(by_node.items()):
        log(f"{name}: {instance} did not register within ResumeTimeout: terminated")
    # Slurm has powered them down already: only the reason changes, for all in one update.
    why = reason(Check.LAUNCH, "its instance did not register within ResumeTimeout")
    nodes.take_down(ctx, wanted, why, power_down=False)
    now = float(ctx.clock())
    with RetryState.changing(ctx) as state:
        for pool_name, group in grouped.items():
            last = reason(Check.LAUNCH, f"{len(group)} node(s) did not register in time")
            state.failed(pool_name, last, now, config.launch_retry)
    return {"terminated": by_node}


def _instances(
    ctx: Context, cluster: str, pools: Any, names: list[str]
) -> dict[str, nodes.Instance]:
    if not names:
        return {}
    return nodes.running_at(ctx, cluster, nodes.records(ctx, pools), names)
