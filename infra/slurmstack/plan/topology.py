"""Which network topology each pool gets, whether Slurm's topology/tree is configured for
the cluster, and the UltraServer pools' blocks (slurmstack.rules.topology decides; this
applies it to a plan)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from slurmstack.contract import block_names, block_topology
from slurmstack.plan.cluster import ClusterPlan
from slurmstack.plan.slurm import oldest_slurm_version
from slurmstack.rules.topology import (
    ClusterTopology,
    PoolTopology,
    TopologyKind,
    cluster_topology,
    pool_topology,
)
from slurmstack.slurm_releases import line_of


def pool_topologies(plan: ClusterPlan) -> dict[str, PoolTopology]:
    """Pool name -> its topology, in the definition's order."""
    return {
        spec.name: pool_topology(
            spec.topology, plan.pool(spec.name).instance_type, plan.pool(spec.name).max_count
        )
        for spec in plan.spec.pools
    }


def plan_topology(plan: ClusterPlan) -> ClusterTopology:
    return cluster_topology(
        list(pool_topologies(plan).values()), line_of(oldest_slurm_version(plan.spec))
    )


def placed_pools(plan: ClusterPlan) -> frozenset[str]:
    """The pools whose nodes the head places under their network nodes (none unless the
    cluster has topology/tree)."""
    if not plan_topology(plan).tree:
        return frozenset()
    return frozenset(
        name
        for name, chosen in pool_topologies(plan).items()
        if chosen.kind is not TopologyKind.NONE
    )


@dataclass(frozen=True)
class BlockPool:
    """An UltraServer pool's block topology: ``size`` instances per UltraServer, one block
    listed for each UltraServer the pool can hold (``blocks``), and the partition that
    schedules by them, named as the topology."""

    pool: str
    size: int
    blocks: tuple[str, ...]

    @property
    def topology(self) -> str:
        return block_topology(self.pool)


def block_pools(plan: ClusterPlan) -> dict[str, BlockPool]:
    """The pools whose UltraServers get a block topology (none unless the cluster has
    topology), by pool name."""
    if not plan_topology(plan).tree:
        return {}
    out = {}
    for name, chosen in pool_topologies(plan).items():
        if chosen.kind is TopologyKind.BLOCK and chosen.block_size:
            count = math.ceil(plan.pool(name).max_count / chosen.block_size)
            out[name] = BlockPool(name, chosen.block_size, block_names(name, count))
    return out
