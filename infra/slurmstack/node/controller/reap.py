"""reap (head): delete the records of dead dynamic nodes of the cluster's pools."""

from __future__ import annotations

from typing import Any

from ...contract import (
    REAPER_GRACE_SECONDS,
    SLURM_REASON_SEPARATOR,
    Check,
    PoolRef,
    is_node_name_of,
    parse_reason,
)
from ..context import AgentError, Context, log
from ..ec2 import live_instances
from ..slurm import SCONTROL, SLURM_REASONS, NodeRecord, slurm_nodes, slurm_users

# State flags a record may carry and still be deleted. Any other (COMPLETING, RESERVED, MAINT,
# FAIL, REBOOT_*, POWER*, PLANNED, ...) keeps it: a job, a reservation or an operator's
# intention is attached to the node.
REAPABLE_FLAGS = frozenset({"DYNAMIC_NORM", "NOT_RESPONDING", "DRAIN", "INVALID_REG"})


def reap(
    ctx: Context, grace: float = REAPER_GRACE_SECONDS, ec2: bool = True, dry_run: bool = False
) -> dict[str, Any]:
    """Delete the records of dead dynamic nodes of the cluster's pools (reap_verdict says
    which); with ``ec2``, keep any whose name or address a live instance of the cluster
    still has. Returns what was deleted, what failed, and why DOWN records were kept."""
    config = ctx.config()
    pools = config.pools
    users = slurm_users(ctx)
    now = float(ctx.clock())
    chosen: list[NodeRecord] = []
    kept: dict[str, str] = {}
    for node in slurm_nodes(ctx):
        verdict = reap_verdict(node, pools, users, now, grace)
        if verdict is None:
            chosen.append(node)
        elif _looks_down(node) and _pool_of(node.name, pools) is not None:
            kept[node.name] = verdict
    if chosen and ec2:
        try:
            names, addresses = live_instances(ctx, config.cluster, pools)
        except Exception as exc:  # botocore's errors: delete nothing unconfirmed
            raise AgentError(f"cannot list the cluster's instances: {exc}") from exc
        for node in list(chosen):
            if node.name in names or node.address in addresses:
                kept[node.name] = "an instance of the cluster still has its address"
                chosen.remove(node)
    for name, why in sorted(kept.items()):
        log(f"reap: keeping {name}: {why}")
    result: dict[str, Any] = {"deleted": [], "failed": {}, "kept": dict(sorted(kept.items()))}
    if dry_run:
        result["would_delete"] = [n.name for n in chosen]
        return result
    for node in chosen:
        name = node.name
        done = ctx.sh(*SCONTROL, "delete", f"nodename={name}", check=False)
        if done.returncode == 0:
            log(f"reap: deleted {name} ({node.fields.get('State')}, {node.fields.get('Reason')})")
            result["deleted"].append(name)
        else:
            detail = (done.stderr or done.stdout or "").strip()
            log(f"reap: scontrol delete nodename={name} failed: {detail}")
            result["failed"][name] = detail
    return result


def _pool_of(name: str, pools: tuple[PoolRef, ...]) -> PoolRef | None:
    for pool in pools:
        if is_node_name_of(name, pool.node_name_prefix):
            return pool
    return None


def _looks_down(node: NodeRecord) -> bool:
    return node.base == "DOWN" or bool({"NOT_RESPONDING", "DRAIN"} & node.flags)


def reap_verdict(
    node: NodeRecord,
    pools: tuple[PoolRef, ...],
    slurm_users: set[str],
    now: float,
    grace: float,
) -> str | None:
    """None when the record may be deleted, else why it stays. Deleted only: a dynamic node
    (DYNAMIC_NORM) named and featured as a node of one of the pools, DOWN and not responding,
    with no flag outside REAPABLE_FLAGS, nothing allocated, a reason stamped by SlurmUser
    whose every part is one of SLURM_REASONS (slurmctld's own "Not responding", or a drain
    Slurm itself set: an operator's reason stays for the operator, also when Slurm >= 23.02
    appended its own to it and re-stamped it), or the controller's own
    `slurmstack:instance-gone:` (it found no live instance at the node's address), and DOWN
    for at least ``grace`` seconds. The DOWN time is the reason's stamp, which slurmctld sets
    when it marks the node DOWN; LastBusyTime and SlurmdStartTime count when later, so an older
    reason cannot shorten the grace."""
    pool = _pool_of(node.name, pools)
    if pool is None:
        return "not a node of this cluster's pools"
    if pool.feature not in node.features:
        return f"lacks the feature of pool {pool.name}"
    base, flags = node.base, node.flags
    if "DYNAMIC_NORM" not in flags:
        return "not a dynamic node"
    if base != "DOWN":
        return f"{base}, not DOWN"
    # The controller set it DOWN itself, having seen no live instance at its address.
    gone = (parse_reason(node.reason) or ("", ""))[0] == Check.INSTANCE_GONE
    if "NOT_RESPONDING" not in flags and not gone:
        return "DOWN but slurmd responds"
    others = sorted(flags - REAPABLE_FLAGS)
    if others:
        return f"state flags {'+'.join(others)}"
    if node.allocated:
        return "resources still allocated"
    user = node.reason_user
    if user is None:
        return "its reason carries no stamp"
    kept = None if gone else _operator_reason(node, user, slurm_users)
    if kept is not None:
        return kept
    times = [node.reason_time, node.time("LastBusyTime"), node.time("SlurmdStartTime")]
    known = [t for t in times if t is not None]
    if not known:
        return "no time to measure the grace period from"
    down_for = now - max(known)
    if down_for < grace:
        return f"DOWN for {int(down_for)} s, less than the grace period ({int(grace)} s)"
    return None


def _operator_reason(node: NodeRecord, user: str, slurm_users: set[str]) -> str | None:
    """Why a reason is left for the operator, or None when it is Slurm's own."""
    if user not in slurm_users:
        return f"reason set by {user}, not by Slurm: left for the operator"
    foreign = [
        part
        for part in node.reason.split(SLURM_REASON_SEPARATOR)
        if part.strip() not in SLURM_REASONS
    ]
    if foreign:
        # The stamp is Slurm's, but only because Slurm appended its own reason (>= 23.02).
        return (
            f"reason {SLURM_REASON_SEPARATOR.join(foreign)!r} is not Slurm's own (Slurm appended to "
            "it and stamped it): left for the operator"
        )
    return None
