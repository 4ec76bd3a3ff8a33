"""`plan`'s topology section: which pool gets which network topology, and why
(slurmstack.rules.topology; the source of EC2's covered types with it)."""

from __future__ import annotations

from typing import Any

from slurmstack.plan import ClusterPlan
from slurmstack.rules.topology import SOURCE, pool_topology


def topology_section(plan: ClusterPlan) -> dict[str, Any]:
    pools = []
    for spec in plan.spec.pools:
        pool = plan.pool(spec.name)
        chosen = pool_topology(spec.topology, pool.instance_type, pool.max_count)
        pools.append(
            {
                "pool": pool.name,
                "instance_type": pool.instance_type,
                "setting": spec.topology.value,
                "topology": chosen.kind.value,
                "network_layers": chosen.layers,
                "why": chosen.why,
            }
        )
    return {
        "pools": pools,
        "source": SOURCE,
        # Until the head applies it (issue 27's next part), Slurm schedules without topology.
        "applied": False,
    }
