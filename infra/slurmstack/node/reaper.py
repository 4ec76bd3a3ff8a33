"""reap (head): delete the records of dead dynamic nodes of the cluster's pools."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..contract import (
    CLUSTER_TAG,
    POOL_TAG,
    REAPER_GRACE_SECONDS,
    Check,
    PoolRef,
    is_node_name_of,
    node_name,
    parse_reason,
)
from .context import AgentError, Context, log
from .slurm_records import SCONTROL, parse_node_line, slurm_time

if TYPE_CHECKING:
    from mypy_boto3_ec2.type_defs import FilterTypeDef

# State flags a record may carry and still be deleted. Any other (COMPLETING, RESERVED, MAINT,
# FAIL, REBOOT_*, POWER*, PLANNED, ...) keeps it: a job, a reservation or an operator's
# intention is attached to the node.
REAPABLE_FLAGS = frozenset({"DYNAMIC_NORM", "NOT_RESPONDING", "DRAIN", "INVALID_REG"})
# EC2 states in which an instance still holds its private address.
LIVE_INSTANCE_STATES = ("pending", "running", "stopping", "stopped")
# Reasons slurmctld and slurmd set on their own (Slurm's src/slurmctld: ping_nodes.c,
# node_mgr.c, job_mgr.c, proc_req.c; slurmd's "Kill task failed").
SLURM_REASONS = frozenset(
    {
        "Not responding",
        "Kill task failed",
        "Node unexpectedly rebooted",
        "Prolog error",
        "Epilog error",
        "batch job complete failure",
    }
)
# Slurm 23.02 and later append a new reason to the one a node has (" : " between them) and
# stamp the whole with SlurmUser and the time (set_node_reason in node_mgr.c): an operator's
# "ECC errors on GPU 3 [root@...]" on a node that then stops responding reads
# "ECC errors on GPU 3 : Not responding [slurm@...]". 22.05 kept the operator's reason.
REASON_SEPARATOR = " : "


def slurm_users(ctx: Context) -> set[str]:
    """SlurmUser, by name and uid: who stamps the reasons slurmctld sets itself."""
    config = ctx.ok(*SCONTROL, "show", "config")
    match = re.search(r"^SlurmUser\s*=\s*([^\s(]+)(?:\((\d+)\))?", config, re.MULTILINE)
    if match is None:
        raise AgentError("`scontrol show config` names no SlurmUser")
    return {g for g in match.groups() if g}


def slurm_nodes(ctx: Context) -> list[dict[str, str]]:
    """Every node record, from `scontrol show node` in one-line form."""
    out = ctx.ok(*SCONTROL, "--all", "--oneliner", "show", "node")
    return [parse_node_line(line) for line in out.splitlines() if line.startswith("NodeName=")]


def live_instances(
    ctx: Context, cluster: str, pools: tuple[PoolRef, ...]
) -> tuple[set[str], set[str]]:
    """(Slurm names, private addresses) of the cluster's instances that still exist: one
    paginated DescribeInstances filtered by the cluster tag."""
    prefixes = {p.name: p.node_name_prefix for p in pools}
    names: set[str] = set()
    addresses: set[str] = set()
    filters: list[FilterTypeDef] = [
        {"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster]},
        {"Name": "instance-state-name", "Values": list(LIVE_INSTANCE_STATES)},
    ]
    pages = ctx.aws.ec2().get_paginator("describe_instances").paginate(Filters=filters)
    for page in pages:
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                address = instance.get("PrivateIpAddress")
                if not address:
                    continue
                addresses.add(address)
                tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
                if tags.get(POOL_TAG) in prefixes:
                    names.add(node_name(prefixes[tags[POOL_TAG]], address))
    return names, addresses


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
    chosen: list[dict[str, str]] = []
    kept: dict[str, str] = {}
    for node in slurm_nodes(ctx):
        verdict = reap_verdict(node, pools, users, now, grace)
        if verdict is None:
            chosen.append(node)
        elif _looks_down(node) and _pool_of(node.get("NodeName", ""), pools) is not None:
            kept[node["NodeName"]] = verdict
    if chosen and ec2:
        try:
            names, addresses = live_instances(ctx, config.cluster, pools)
        except Exception as exc:  # botocore's errors: delete nothing unconfirmed
            raise AgentError(f"cannot list the cluster's instances: {exc}") from exc
        for node in list(chosen):
            if node["NodeName"] in names or node.get("NodeAddr") in addresses:
                kept[node["NodeName"]] = "an instance of the cluster still has its address"
                chosen.remove(node)
    for name, why in sorted(kept.items()):
        log(f"reap: keeping {name}: {why}")
    result: dict[str, Any] = {"deleted": [], "failed": {}, "kept": dict(sorted(kept.items()))}
    if dry_run:
        result["would_delete"] = [n["NodeName"] for n in chosen]
        return result
    for node in chosen:
        name = node["NodeName"]
        done = ctx.sh(*SCONTROL, "delete", f"nodename={name}", check=False)
        if done.returncode == 0:
            log(f"reap: deleted {name} ({node.get('State')}, {node.get('Reason')})")
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


def _looks_down(node: dict[str, str]) -> bool:
    state = node.get("State", "").split("+")
    return state[0] == "DOWN" or "NOT_RESPONDING" in state[1:] or "DRAIN" in state[1:]


def reap_verdict(
    node: dict[str, str],
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
    name = node.get("NodeName", "")
    pool = _pool_of(name, pools)
    if pool is None:
        return "not a node of this cluster's pools"
    if pool.feature not in node.get("AvailableFeatures", "").split(","):
        return f"lacks the feature of pool {pool.name}"
    base, *flags = node.get("State", "").split("+")
    if "DYNAMIC_NORM" not in flags:
        return "not a dynamic node"
    if base != "DOWN":
        return f"{base}, not DOWN"
    # The controller set it DOWN itself, having seen no live instance at its address.
    gone = (parse_reason(node.get("Reason", "")) or ("", ""))[0] == Check.INSTANCE_GONE
    if "NOT_RESPONDING" not in flags and not gone:
        return "DOWN but slurmd responds"
    others = sorted(set(flags) - REAPABLE_FLAGS)
    if others:
        return f"state flags {'+'.join(others)}"
    if node.get("CPUAlloc", "0") != "0" or node.get("AllocTRES", ""):
        return "resources still allocated"
    user = node.get("ReasonUser")
    if user is None:
        return "its reason carries no stamp"
    kept = None if gone else _operator_reason(node, user, slurm_users)
    if kept is not None:
        return kept
    times = [slurm_time(node.get(k)) for k in ("ReasonTime", "LastBusyTime", "SlurmdStartTime")]
    known = [t for t in times if t is not None]
    if not known:
        return "no time to measure the grace period from"
    down_for = now - max(known)
    if down_for < grace:
        return f"DOWN for {int(down_for)} s, less than the grace period ({int(grace)} s)"
    return None


def _operator_reason(node: dict[str, str], user: str, slurm_users: set[str]) -> str | None:
    """Why a reason is left for the operator, or None when it is Slurm's own."""
    if user not in slurm_users:
        return f"reason set by {user}, not by Slurm: left for the operator"
    foreign = [
        part
        for part in node.get("Reason", "").split(REASON_SEPARATOR)
        if part.strip() not in SLURM_REASONS
    ]
    if foreign:
        # The stamp is Slurm's, but only because Slurm appended its own reason (>= 23.02).
        return (
            f"reason {REASON_SEPARATOR.join(foreign)!r} is not Slurm's own (Slurm appended to "
            "it and stamped it): left for the operator"
        )
    return None
