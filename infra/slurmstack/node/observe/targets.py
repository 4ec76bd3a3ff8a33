"""The scrape targets, as Prometheus's file_sd reads them: every node Slurm knows that has an
instance (not powered down, its address known), with its Slurm name and pool as labels; GPU
pools' nodes also on dcgm-exporter's port. Prometheus watches the files and follows a change
without a restart, so an elastic node is scraped from the pass after it registers and dropped
from the pass after it powers down. A file is replaced only when its content changes."""

from __future__ import annotations

import json
from typing import Any

from ...contract import (
    CLUSTER_TAG,
    DCGM_EXPORTER_PORT,
    LOGIN_POOL_TAG,
    LOGIN_ROLE,
    LOGIN_TARGETS_FILE,
    NODE_EXPORTER_PORT,
    SCRAPE_TARGETS_DIR,
    MonitoringConfig,
    NodeConfig,
)
from ..context import AgentError, Context, log, write_atomic
from ..ec2 import INSTANCES_PAGE
from ..slurm import NodeRecord
from .slurm_metrics import pool_of

NODES_FILE = f"{SCRAPE_TARGETS_DIR}/nodes.json"
GPUS_FILE = f"{SCRAPE_TARGETS_DIR}/gpus.json"


def scrapeable(node: NodeRecord) -> bool:
    """A node with an instance behind it: an address of its own, not powered down."""
    return bool(node.address) and node.address != node.name and not node.powered_down


def target_groups(
    config: NodeConfig, monitoring: MonitoringConfig, nodes: list[NodeRecord], port: int
) -> list[dict[str, Any]]:
    gpu_pools = {p.pool for p in monitoring.prices if p.gpus}
    groups = []
    for node in sorted(nodes, key=lambda n: n.name):
        pool = pool_of(config, node.name)
        if (
            not scrapeable(node)
            or not pool
            or (port == DCGM_EXPORTER_PORT and pool not in gpu_pools)
        ):
            continue
        labels = {"node": node.name, "pool": pool}
        groups.append({"targets": [f"{node.address}:{port}"], "labels": labels})
    return groups


def _replace_if_changed(ctx: Context, node_path: str, groups: list[dict[str, Any]]) -> bool:
    text = json.dumps(groups, indent=1, sort_keys=True) + "\n"
    path = ctx.path(node_path)
    if path.exists() and path.read_text() == text:
        return False
    write_atomic(path, text.encode(), 0o644)
    return True


def write_targets(
    ctx: Context, config: NodeConfig, monitoring: MonitoringConfig, nodes: list[NodeRecord]
) -> dict[str, int]:
    """Both files; how many targets each holds."""
    out = {}
    for node_path, port in ((NODES_FILE, NODE_EXPORTER_PORT), (GPUS_FILE, DCGM_EXPORTER_PORT)):
        groups = target_groups(config, monitoring, nodes, port)
        _replace_if_changed(ctx, node_path, groups)
        out[node_path] = len(groups)
    return out


def login_target_groups(ctx: Context, monitoring: MonitoringConfig) -> list[dict[str, Any]]:
    """The running instances of the cluster's login pools (no Slurm node record names them),
    from one paginated DescribeInstances filtered by the cluster's and the login pools' tags,
    each labelled with its instance id and its login role."""
    filters: list[Any] = [
        {"Name": f"tag:{CLUSTER_TAG}", "Values": [monitoring.cluster]},
        {"Name": f"tag:{LOGIN_POOL_TAG}", "Values": list(monitoring.login_pools)},
        {"Name": "instance-state-name", "Values": ["running"]},
    ]
    paginator = ctx.aws.ec2().get_paginator("describe_instances")
    groups = []
    for page in paginator.paginate(Filters=filters, PaginationConfig=INSTANCES_PAGE):
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                address = instance.get("PrivateIpAddress")
                tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
                if not address or tags.get(LOGIN_POOL_TAG) not in monitoring.login_pools:
                    continue
                labels = {
                    "node": instance["InstanceId"],
                    "pool": f"{LOGIN_ROLE}/{tags[LOGIN_POOL_TAG]}",
                }
                groups.append({"targets": [f"{address}:{NODE_EXPORTER_PORT}"], "labels": labels})
    return sorted(groups, key=lambda g: g["labels"]["node"])


def write_login_targets(ctx: Context, monitoring: MonitoringConfig) -> int | None:
    """login.json (none without login pools); the number of targets, or None when EC2 could
    not be read: the file keeps its last list until a pass reads it again."""
    from botocore.exceptions import BotoCoreError, ClientError  # the agent loads boto late

    if not monitoring.login_pools:
        _replace_if_changed(ctx, LOGIN_TARGETS_FILE, [])
        return 0
    try:
        groups = login_target_groups(ctx, monitoring)
    except (AgentError, BotoCoreError, ClientError) as error:
        log(f"login targets: EC2 not read ({error}); {LOGIN_TARGETS_FILE} kept as it is")
        return None
    _replace_if_changed(ctx, LOGIN_TARGETS_FILE, groups)
    return len(groups)
