"""EC2 as the agent reads it: the cluster's instances that still exist."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..contract import CLUSTER_TAG, POOL_TAG, PoolRef, node_name
from .context import Context

if TYPE_CHECKING:
    from mypy_boto3_ec2.type_defs import FilterTypeDef, PaginatorConfigTypeDef

# EC2 states in which an instance still holds its private address.
LIVE_INSTANCE_STATES = ("pending", "running", "stopping", "stopped")
# DescribeInstances with filters, a page at a time: at most 1,000 instances a page (its
# MaxResults), each page asked for with the token of the one before.
INSTANCES_PAGE: PaginatorConfigTypeDef = {"PageSize": 1000}


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
    paginator = ctx.aws.ec2().get_paginator("describe_instances")
    pages = paginator.paginate(Filters=filters, PaginationConfig=INSTANCES_PAGE)
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
