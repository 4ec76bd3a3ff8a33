"""The elastic nodes as Slurm and EC2 see them: hostlists, which pool a node is of, the node
records, the instances the power programs launched, and the updates the programs make."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...contract import CLUSTER_TAG, ELASTIC_TAG, NODE_NAME_TAG, ElasticPool, elastic_index
from ..context import Context, log
from ..ec2 import INSTANCES_PAGE, LIVE_INSTANCE_STATES
from ..slurm import SCONTROL, NodeRecord, slurm_nodes

if TYPE_CHECKING:
    from mypy_boto3_ec2.type_defs import FilterTypeDef

# EC2 takes at most this many values in one filter (DescribeInstances).
FILTER_VALUES_MAX = 200


def expand(ctx: Context, hostlist: str) -> list[str]:
    """The node names of a Slurm hostlist (what slurmctld passes the programs)."""
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
    ctx.ok(*SCONTROL, "update", f"nodename={listed}", "state=DOWN", f"reason={reason}")
    if power_down:
        ctx.ok(*SCONTROL, "update", f"nodename={listed}", "state=POWER_DOWN_FORCE")


def set_address(ctx: Context, name: str, address: str) -> None:
    """Where slurmctld reaches the node: Slurm 22.05 takes a CLOUD node's address only from
    here (23.02 and later also from its registration)."""
    ctx.ok(*SCONTROL, "update", f"nodename={name}", f"nodeaddr={address}", f"nodehostname={name}")


def return_to_service(ctx: Context, names: list[str]) -> None:
    if names:
        ctx.ok(*SCONTROL, "update", f"nodename={','.join(names)}", "state=RESUME")


# --- instances ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instance:
    instance_id: str
    pool: str
    node: str | None  # NODE_NAME_TAG, once the resume program has set it
    address: str | None
    state: str
    launched: datetime.datetime


def instances(ctx: Context, cluster: str, nodes: list[str] | None = None) -> list[Instance]:
    """The live instances the power programs launched for ``cluster`` (ELASTIC_TAG), all of
    them or those of ``nodes``."""
    base: list[FilterTypeDef] = [
        {"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster]},
        {"Name": "tag-key", "Values": [ELASTIC_TAG]},
        {"Name": "instance-state-name", "Values": list(LIVE_INSTANCE_STATES)},
    ]
    batches: list[list[FilterTypeDef]] = [base]
    if nodes is not None:
        batches = [
            [*base, {"Name": f"tag:{NODE_NAME_TAG}", "Values": chunk}]
            for chunk in _chunks(nodes, FILTER_VALUES_MAX)
        ]
    found = []
    paginator = ctx.aws.ec2().get_paginator("describe_instances")
    for filters in batches:
        for page in paginator.paginate(Filters=filters, PaginationConfig=INSTANCES_PAGE):
            for reservation in page["Reservations"]:
                for item in reservation["Instances"]:
                    tags = {t["Key"]: t["Value"] for t in item.get("Tags", [])}
                    found.append(
                        Instance(
                            instance_id=item["InstanceId"],
                            pool=tags.get(ELASTIC_TAG, ""),
                            node=tags.get(NODE_NAME_TAG),
                            address=item.get("PrivateIpAddress"),
                            state=item["State"]["Name"],
                            launched=item["LaunchTime"],
                        )
                    )
    return found


def terminate(ctx: Context, instance_ids: list[str], why: str) -> None:
    for chunk in _chunks(sorted(instance_ids), FILTER_VALUES_MAX):
        log(f"terminating {', '.join(chunk)}: {why}")
        ctx.aws.ec2().terminate_instances(InstanceIds=chunk)


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
