"""Topology: a pool's network topology (pools[].topology) is one EC2 can give its type."""

from __future__ import annotations

from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error
from slurmstack.findings import Finding
from slurmstack.rules.topology import ULTRASERVER_TYPES, covered
from slurmstack.spec import ClusterSpec, TopologyChoice


# why: Slurm's topology needs each node's place, which only EC2's instance topology gives, for
# the types it covers; a block is an UltraServer's capacity block, which other types lack.
@rule
def pool_topology_unavailable(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.pools):
        path = f"pools[{index}].topology"
        kind = pool.instance_type
        if pool.topology is TopologyChoice.BLOCK and kind not in ULTRASERVER_TYPES:
            yield error(
                path,
                f"block topology needs UltraServer capacity blocks, and {kind} has none "
                f"(UltraServer types: {', '.join(sorted(ULTRASERVER_TYPES))}); use tree or auto",
            )
        elif pool.topology is TopologyChoice.TREE and not covered(kind):
            yield error(
                path,
                f"EC2 reports no instance topology for {kind}, so Slurm would have no switch "
                "to place its nodes under; use auto (none for this type) or off",
            )
