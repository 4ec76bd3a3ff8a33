"""The elastic nodes as Slurm and EC2 see them: hostlists, which pool a node is of, the node
records, the instances the power programs launched, and the updates the programs make."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...contract import ELASTIC_TAG, LAUNCH_TAG, ElasticPool, elastic_index
from ..context import AgentError, Context, log
from ..ec2 import cluster_filters, described_instances, tags_of
from ..slurm import SCONTROL, NodeRecord, slurm_nodes
from . import hostlist as hostlists

if TYPE_CHECKING:
    from mypy_boto3_ec2.type_defs import FilterTypeDef

# EC2 takes at most this many values in one filter (DescribeInstances).
FILTER_VALUES_MAX = 200
TERMINATE_MAX = 500
# What scontrol says when slurmctld answers too late or not at all: busy (a thousand nodes
# powering up, a scheduling pass, MessageTimeout passed) or restarting. An update is tried
# again, UPDATE_ATTEMPTS times in all, backing off from UPDATE_BACKOFF seconds: setting an
# address, a state or a reason twice is harmless, launched instances without their nodes' are not.
SLURMCTLD_BUSY = (
    "Socket timed out",
    "Unable to contact slurm controller",
    "Resource temporarily unavailable",
    "Zero Bytes were transmitted or received",
)
UPDATE_ATTEMPTS = 4
UPDATE_BACKOFF = 2.0


def expand(ctx: Context, hostlist: str) -> list[str]:
    """The node names of a Slurm hostlist (what slurmctld passes the programs); scontrol reads
    the ones this reader does not know."""
    try:
        return hostlists.expand(hostlist)
    except hostlists.HostlistError:
        out = ctx.ok(*SCONTROL, "show", "hostnames", hostlist)
        return [name for name in out.split() if name]


def pool_of(name: str, pools: Iterable[ElasticPool]) -> ElasticPool | None:
    for pool in pools:
        index = elastic_index(name, pool.name)
        if index is not None and index <= pool.nodes:
            return pool
    return None


def by_pool(
    names: Iterable[str], pools: tuple[ElasticPool, ...]
) -> tuple[dict[str, list[str]], list[str]]:
    """(pool name -> its nodes among ``names``, in name order; names of no elastic pool)."""
    grouped: dict[str, list[str]] = {}
    strangers = []
    for name in names:
        pool = pool_of(name, pools)
        if pool is None:
            strangers.append(name)
        else:
            grouped.setdefault(pool.name, []).append(name)
    return {k: sorted(v, key=_natural) for k, v in grouped.items()}, strangers


def _natural(name: str) -> tuple[str, int]:
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return head, int(tail) if tail else -1


def records(ctx: Context, pools: tuple[ElasticPool, ...]) -> dict[str, NodeRecord]:
    """Slurm's record of every elastic node, by name."""
    return {n.name: n for n in slurm_nodes(ctx) if pool_of(n.name, pools)}


def elastic_records(ctx: Context, pools: tuple[ElasticPool, ...]) -> dict[str, NodeRecord]:
    """Slurm's record of every node named as an elastic node of a pool: those of the
    definition, and those a max_count decrease took out of it that Slurm still holds."""
    return {
        n.name: n
        for n in slurm_nodes(ctx)
        if any(elastic_index(n.name, p.name) is not None for p in pools)
    }


# --- updates --------------------------------------------------------------------------------


def take_down(ctx: Context, names: list[str], reason: str, power_down: bool = True) -> None:
    """Nodes whose launch failed: DOWN with ``reason`` (Slurm requeues their batch jobs, which
    stay pending), then powered down at once (``power_down``) rather than left powering up
    until ResumeTimeout. slurm.conf has no idle_on_node_suspend, so they stay DOWN, with the
    reason, until the sweep returns them."""
    if not names:
        return
    listed = ",".join(names)
    log(f"{listed}: DOWN, {reason}")
    update(ctx, f"nodename={listed}", "state=DOWN", f"reason={reason}")
    if power_down:
        update(ctx, f"nodename={listed}", "state=POWER_DOWN_FORCE")


def update(ctx: Context, *fields: str) -> None:
    """`scontrol update` with ``fields``, again while slurmctld is too busy to answer."""
    for attempt in range(UPDATE_ATTEMPTS):
        try:
            ctx.ok(*SCONTROL, "update", *fields)
            return
        except AgentError as exc:
            busy = any(sign in str(exc) for sign in SLURMCTLD_BUSY)
            if not busy or attempt + 1 == UPDATE_ATTEMPTS:
                raise
            delay = UPDATE_BACKOFF * 2**attempt
            log(f"slurmctld did not answer an update ({fields[0][:60]}): again in {delay:g} s")
            ctx.sleep(delay)


def set_addresses(ctx: Context, addresses: dict[str, str]) -> None:
    """Where slurmctld reaches each node, in one update for them all (scontrol matches a list
    of addresses to a list of nodes, in order). Slurm 22.05 takes a CLOUD node's address only
    from here (23.02 and later also from its registration)."""
    if not addresses:
        return
    names = list(addresses)
    update(
        ctx,
        f"nodename={','.join(names)}",
        f"nodeaddr={','.join(addresses[n] for n in names)}",
        f"nodehostname={','.join(names)}",
    )


def drain(ctx: Context, names: list[str], reason: str) -> None:
    if names:
        log(f"{','.join(names)}: DRAIN, {reason}")
        update(ctx, f"nodename={','.join(names)}", "state=DRAIN", f"reason={reason}")


def return_to_service(ctx: Context, names: list[str]) -> None:
    if names:
        update(ctx, f"nodename={','.join(names)}", "state=RESUME")


# --- instances ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instance:
    instance_id: str
    pool: str
    launch: str | None  # LAUNCH_TAG: the launch that started it (its names' object)
    address: str | None
    state: str
    launched: datetime.datetime


def instances(ctx: Context, cluster: str, addresses: list[str] | None = None) -> list[Instance]:
    """The live instances the power programs launched for ``cluster`` (ELASTIC_TAG), all of
    them or those at ``addresses`` (where Slurm's records say the nodes run)."""
    base: list[FilterTypeDef] = [
        *cluster_filters(cluster),
        {"Name": "tag-key", "Values": [ELASTIC_TAG]},
    ]
    batches: list[list[FilterTypeDef]] = [base]
    if addresses is not None:
        batches = [
            [*base, {"Name": "private-ip-address", "Values": chunk}]
            for chunk in _chunks(sorted(set(addresses)), FILTER_VALUES_MAX)
        ]
    found = []
    for filters in batches:
        for item in described_instances(ctx, filters):
            tags = tags_of(item)
            found.append(
                Instance(
                    instance_id=item["InstanceId"],
                    pool=tags.get(ELASTIC_TAG, ""),
                    launch=tags.get(LAUNCH_TAG),
                    address=item.get("PrivateIpAddress"),
                    state=item["State"]["Name"],
                    launched=item["LaunchTime"],
                )
            )
    return found


def running_at(
    ctx: Context, cluster: str, found: dict[str, NodeRecord], names: list[str]
) -> dict[str, Instance]:
    """node -> the live elastic instance at the address Slurm's record ``found`` has for it
    (a node powered down for SuspendTimeout has its own name for an address, and none)."""
    wanted = {n: found[n].address for n in names if n in found}
    wanted = {n: a for n, a in wanted.items() if a and a != n}
    if not wanted:
        return {}
    by_address = {i.address: i for i in instances(ctx, cluster, list(wanted.values()))}
    return {n: by_address[a] for n, a in wanted.items() if a in by_address}


def terminate(ctx: Context, instance_ids: list[str], why: str) -> None:
    # TerminateInstances takes up to 1,000 ids (EC2 API Reference), which it asks to batch.
    for chunk in _chunks(sorted(instance_ids), TERMINATE_MAX):
        log(f"terminating {', '.join(chunk)}: {why}")
        ctx.aws.ec2().terminate_instances(InstanceIds=chunk)


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
