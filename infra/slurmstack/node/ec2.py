"""EC2 as the agent reads it: the cluster's instances that still exist."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..contract import CLUSTER_TAG, POOL_TAG, PoolRef, node_name
from .context import Context

if TYPE_CHECKING:
    from mypy_boto3_ec2.type_defs import FilterTypeDef, PaginatorConfigTypeDef

# EC2 states in which an instance still holds its private address.
LIVE_INSTANCE_STATES = ("pending", "running", "stopping", "stopped")
# DescribeInstances with filters, a page at a time: at most 1,000 instances a page (its
# MaxResults), each page asked for with the token of the one before.
INSTANCES_PAGE: PaginatorConfigTypeDef = {"PageSize": 1000}


def cluster_filters(cluster: str) -> list[FilterTypeDef]:
    """The cluster's instances that still hold an address."""
    return [
        {"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster]},
        {"Name": "instance-state-name", "Values": list(LIVE_INSTANCE_STATES)},
    ]


def described_instances(ctx: Context, filters: list[FilterTypeDef]) -> Iterator[dict[str, Any]]:
    """Every instance DescribeInstances matches, page after page to the last (EC2 may answer
    fewer than MaxResults with a NextToken), each with its reservation's owner as "OwnerId"."""
    paginator = ctx.aws.ec2().get_paginator("describe_instances")
    for page in paginator.paginate(Filters=filters, PaginationConfig=INSTANCES_PAGE):
        for reservation in page["Reservations"]:
            owner = reservation.get("OwnerId", "")
            for instance in reservation["Instances"]:
                yield {"OwnerId": owner, **instance}


def tags_of(instance: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in instance.get("Tags", [])}


def live_instances(
    ctx: Context, cluster: str, pools: tuple[PoolRef, ...]
) -> tuple[set[str], set[str]]:
    """(Slurm names, private addresses) of the cluster's instances that still exist: one
    paginated DescribeInstances filtered by the cluster tag."""
    prefixes = {p.name: p.node_name_prefix for p in pools}
    names: set[str] = set()
    addresses: set[str] = set()
    for instance in described_instances(ctx, cluster_filters(cluster)):
        address = instance.get("PrivateIpAddress")
        if not address:
            continue
        addresses.add(address)
        pool = tags_of(instance).get(POOL_TAG)
        if pool in prefixes:
            names.add(node_name(prefixes[pool], address))
    return names, addresses
