"""`plan`'s topology section: which pool gets which network topology, and why
(slurmstack.rules.topology; the source of EC2's covered types with it)."""

from __future__ import annotations

from typing import Any

from slurmstack.plan import ClusterPlan
from slurmstack.plan.topology import plan_topology, pool_topologies
from slurmstack.rules.topology import SOURCE, TopologyKind


def topology_section(plan: ClusterPlan) -> dict[str, Any]:
    pools = []
    cluster = plan_topology(plan)
    for spec in plan.spec.pools:
        pool = plan.pool(spec.name)
        chosen = pool_topologies(plan)[spec.name]
        pools.append(
            {
                "pool": pool.name,
                "instance_type": pool.instance_type,
                "setting": spec.topology.value,
                "topology": chosen.kind.value,
                "network_layers": chosen.layers,
                "why": chosen.why,
                # Its nodes are placed under their network nodes as they join (a block pool's
                # too, until topology/block is configured: its network nodes place it).
                "placed": cluster.tree and chosen.kind is not TopologyKind.NONE,
            }
        )
    return {
        "pools": pools,
        "source": SOURCE,
        "applied": cluster.tree,
        "plugin": "topology/tree" if cluster.tree else None,
        "slurm": cluster.why,
    }
