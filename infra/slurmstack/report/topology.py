"""`plan`'s topology section: which pool gets which network topology, and why
(slurmstack.rules.topology; the source of EC2's covered types with it)."""

from __future__ import annotations

from typing import Any

from slurmstack.plan import ClusterPlan
from slurmstack.plan.topology import block_pools, plan_topology, pool_topologies
from slurmstack.rules.topology import SOURCE, TopologyKind


def topology_section(plan: ClusterPlan) -> dict[str, Any]:
    pools = []
    cluster = plan_topology(plan)
    blocks = block_pools(plan)
    for spec in plan.spec.pools:
        pool = plan.pool(spec.name)
        chosen = pool_topologies(plan)[spec.name]
        block = blocks.get(spec.name)
        pools.append(
            {
                "pool": pool.name,
                "instance_type": pool.instance_type,
                "setting": spec.topology.value,
                "topology": chosen.kind.value,
                "network_layers": chosen.layers,
                "why": chosen.why,
                # Its nodes are placed under their network nodes as they join (a block
                # pool's too: its own partition schedules by the tree).
                "placed": cluster.tree and chosen.kind is not TopologyKind.NONE,
                # An UltraServer pool's blocks: the partition that schedules whole
                # UltraServers, their size, and how many topology.yaml lists.
                "blocks": None
                if block is None
                else {
                    "partition": block.topology,
                    "instances_per_block": block.size,
                    "count": len(block.blocks),
                },
            }
        )
    return {
        "pools": pools,
        "source": SOURCE,
        "applied": cluster.tree,
        "plugin": _plugins(cluster.tree, bool(blocks)),
        "slurm": cluster.why,
    }


def _plugins(tree: bool, blocks: bool) -> str | None:
    if not tree:
        return None
    return "topology/tree + topology/block (topology.yaml)" if blocks else "topology/tree"
