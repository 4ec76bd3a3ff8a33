"""What the controller sees in one pass: every node record in Slurm, and in AWS the cluster's
live instances, its pools' groups (their members' lifecycle and health, the processes
suspended), its Capacity Blocks' end dates and which terminating instances' logs reached the
bucket. One call per kind, paginated; the state it reads grows with pools, not nodes."""

from __future__ import annotations

import datetime
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...contract import (
    LOGS_SHIPPED_MARKER,
    POOL_TAG,
    DeployParameter,
    NodeConfig,
    instance_arn,
    log_prefix,
)
from ..context import Context, log
from ..ec2 import cluster_filters, described_instances, tags_of
from ..slurm import NodeRecord, slurm_nodes, slurm_users

if TYPE_CHECKING:
    pass

TERMINATING_WAIT = "Terminating:Wait"
# DescribeAutoScalingGroups takes at most 50 group names by default (more only with MaxRecords
# raised to match) and answers at most 100 groups a page (Auto Scaling API Reference,
# DescribeAutoScalingGroups): names go 50 a request, each request is paged.
GROUP_NAMES_MAX = 50
GROUPS_PAGE_SIZE = 100
CAPACITY_BLOCK = "capacity_block"


@dataclass(frozen=True)
class Instance:
    """A live instance of the cluster (it still holds its private address)."""

    instance_id: str
    address: str
    pool: str
    state: str


@dataclass(frozen=True)
class Member:
    """An instance as its pool's Auto Scaling group sees it."""

    instance_id: str
    group: str
    pool: str
    lifecycle_state: str  # InService, Terminating:Wait, ...
    health_status: str  # Healthy, Unhealthy


@dataclass(frozen=True)
class Observed:
    now: float
    nodes: tuple[NodeRecord, ...]
    slurm_users: frozenset[str]
    # Whether the cluster's instances and groups were read: nothing that needs them is decided
    # on a pass where AWS did not answer.
    aws: bool = False
    instances: tuple[Instance, ...] = ()
    members: tuple[Member, ...] = ()
    suspended: dict[str, frozenset[str]] = field(default_factory=dict)  # group -> processes
    reservation_ends: dict[str, float] = field(default_factory=dict)  # cr-... -> end (epoch)
    logs_shipped: frozenset[str] = frozenset()  # terminating instances whose logs are in

    def instance_at(self, address: str) -> Instance | None:
        return self._by_address.get(address)

    def member(self, instance_id: str) -> Member | None:
        return self._by_instance.get(instance_id)

    # Looked up once per node each pass: indexed once, not searched (thousands of nodes).
    @functools.cached_property
    def _by_address(self) -> dict[str, Instance]:
        return {i.address: i for i in reversed(self.instances)}

    @functools.cached_property
    def _by_instance(self) -> dict[str, Member]:
        return {m.instance_id: m for m in reversed(self.members)}


def observe(ctx: Context, config: NodeConfig) -> Observed:
    now = float(ctx.clock())
    slurm = Observed(now, tuple(slurm_nodes(ctx)), frozenset(slurm_users(ctx)))
    try:
        instances, account = cluster_instances(ctx, config)
        members, suspended = group_members(ctx, config)
    except Exception as exc:  # botocore's errors: decide nothing that needs AWS this pass
        log(f"control: AWS did not answer ({exc}): acting on Slurm's records only")
        return slurm
    ends = reservation_ends(ctx, config)
    shipped = logs_shipped(ctx, config, members, account)
    return Observed(
        now,
        slurm.nodes,
        slurm.slurm_users,
        aws=True,
        instances=instances,
        members=members,
        suspended=suspended,
        reservation_ends=ends,
        logs_shipped=shipped,
    )


def cluster_instances(ctx: Context, config: NodeConfig) -> tuple[tuple[Instance, ...], str]:
    """The cluster's live instances, and the account they run in (for their ARNs)."""
    found: list[Instance] = []
    account = ""
    for instance in described_instances(ctx, cluster_filters(config.cluster)):
        account = instance["OwnerId"] or account
        address = instance.get("PrivateIpAddress")
        if not address:
            continue
        found.append(
            Instance(
                instance["InstanceId"],
                address,
                tags_of(instance).get(POOL_TAG, ""),
                instance["State"]["Name"],
            )
        )
    return tuple(found), account


def group_members(
    ctx: Context, config: NodeConfig
) -> tuple[tuple[Member, ...], dict[str, frozenset[str]]]:
    pools = {p.group: p.name for p in config.pools if p.group}
    members: list[Member] = []
    suspended: dict[str, frozenset[str]] = {}
    if not pools:
        return (), suspended
    paginator = ctx.aws.autoscaling().get_paginator("describe_auto_scaling_groups")
    names = sorted(pools)
    pages = (
        page
        for start in range(0, len(names), GROUP_NAMES_MAX)
        for page in paginator.paginate(
            AutoScalingGroupNames=names[start : start + GROUP_NAMES_MAX],
            PaginationConfig={"PageSize": GROUPS_PAGE_SIZE},
        )
    )
    for page in pages:
        for group in page["AutoScalingGroups"]:
            name = group["AutoScalingGroupName"]
            suspended[name] = frozenset(
                p["ProcessName"] for p in group.get("SuspendedProcesses", [])
            )
            for member in group.get("Instances", []):
                members.append(
                    Member(
                        member["InstanceId"],
                        name,
                        pools.get(name, ""),
                        member["LifecycleState"],
                        member["HealthStatus"],
                    )
                )
    return tuple(members), suspended


def reservation_ends(ctx: Context, config: NodeConfig) -> dict[str, float]:
    """End dates of the Capacity Blocks the pools run on (empty when EC2 does not say)."""
    ids = sorted({p.reservation_id for p in config.pools if p.capacity_type == CAPACITY_BLOCK})
    ids = [i for i in ids if i]
    if not ids:
        return {}
    try:
        answer = ctx.aws.ec2().describe_capacity_reservations(CapacityReservationIds=ids)
    except Exception as exc:
        log(f"control: cannot read the Capacity Blocks {ids}: {exc}")
        return {}
    return {
        r["CapacityReservationId"]: _epoch(r["EndDate"])
        for r in answer.get("CapacityReservations", [])
        if r.get("EndDate") is not None
    }


def _epoch(value: Any) -> float:
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def logs_shipped(
    ctx: Context, config: NodeConfig, members: tuple[Member, ...], account: str
) -> frozenset[str]:
    """The terminating instances whose logs' marker is in the bucket."""
    waiting = [m for m in members if m.lifecycle_state == TERMINATING_WAIT]
    if not waiting or not account:
        return frozenset()
    bucket = ctx.get_parameter(DeployParameter.BUCKET)
    if bucket is None:
        return frozenset()
    s3 = ctx.aws.s3()
    shipped = set()
    for member in waiting:
        arn = instance_arn(config.region, account, member.instance_id)
        key = log_prefix(member.pool, arn) + LOGS_SHIPPED_MARKER
        try:
            s3.head_object(Bucket=bucket, Key=key)
        except Exception:  # 404, or not readable: not there as far as the controller can tell
            continue
        shipped.add(member.instance_id)
    return frozenset(shipped)
