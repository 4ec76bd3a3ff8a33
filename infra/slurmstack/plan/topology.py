"""Which network topology each pool gets and whether Slurm's topology/tree is configured for
the cluster (slurmstack.rules.topology decides; this applies it to a plan)."""

from __future__ import annotations

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
