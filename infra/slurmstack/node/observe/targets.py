"""The scrape targets, as Prometheus's file_sd reads them: every node Slurm knows that has an
instance (not powered down, its address known), with its Slurm name and pool as labels; GPU
pools' nodes also on dcgm-exporter's port. Prometheus watches the files and follows a change
without a restart, so an elastic node is scraped from the pass after it registers and dropped
from the pass after it powers down. A file is replaced only when its content changes."""

from __future__ import annotations

import json
from typing import Any

from ...contract import (
    DCGM_EXPORTER_PORT,
    NODE_EXPORTER_PORT,
    SCRAPE_TARGETS_DIR,
    MonitoringConfig,
    NodeConfig,
)
from ..context import Context, write_atomic
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
