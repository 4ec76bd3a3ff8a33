"""Which network topology a pool gets (pools[].topology): EC2's instance topology where EC2
reports one for the type, Slurm's topology/tree for it, topology/block where the capacity is
UltraServer-shaped, none where there is nothing to place.

Shared by the checks (a topology asked of a type EC2 reports none for) and the plan (which pool
gets which, and why). Pure: no Pulumi import.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from slurmstack.spec import TopologyChoice

SOURCE = (
    "EC2 User Guide, 'Prerequisites for Amazon EC2 topology', Instance types (3 or 4 network "
    "nodes per instance); 'How Amazon EC2 topology works'"
)

# The types DescribeInstanceTopology answers for, by the network nodes it returns (SOURCE).
_THREE_LAYERS = (
    "g6e.xlarge g6e.2xlarge g6e.4xlarge g6e.8xlarge g6e.12xlarge g6e.16xlarge g6e.24xlarge "
    "g6e.48xlarge g7e.2xlarge g7e.4xlarge g7e.8xlarge g7e.12xlarge g7e.24xlarge g7e.48xlarge "
    "hpc6a.48xlarge hpc6id.32xlarge hpc7g.4xlarge hpc7g.8xlarge hpc7g.16xlarge hpc7a.12xlarge "
    "hpc7a.24xlarge hpc7a.48xlarge hpc7a.96xlarge p3dn.24xlarge p4d.24xlarge p4de.24xlarge "
    "p5.48xlarge p5e.48xlarge p5en.48xlarge p6e-gb200.36xlarge trn1.2xlarge trn1.32xlarge "
    "trn1n.32xlarge trn2.48xlarge trn2u.48xlarge"
)
_FOUR_LAYERS = "p6-b200.48xlarge p6-b300.48xlarge"
LAYERS: dict[str, int] = {
    **dict.fromkeys(_THREE_LAYERS.split(), 3),
    **dict.fromkeys(_FOUR_LAYERS.split(), 4),
}
# UltraServer types and the instances of one UltraServer: EC2 sells each UltraServer as one
# Capacity Block ("How Capacity Blocks work", EC2 User Guide) and names it in the topology
# answer (EC2 API Reference, "InstanceTopology": capacityBlockId, "only supported for
# UltraServer instances"), the unit Slurm's topology/block schedules. A Trn2 UltraServer is
# four trn2u.48xlarge joined by NeuronLink (AWS Neuron, "Amazon EC2 Trn2 Architecture").
# P6e-GB200 is not here: the catalog has no p6e-gb200.36xlarge (moto's DescribeInstanceTypes
# data lacks it), and its UltraServers come in two sizes (9 or 18 instances) to model first.
ULTRASERVER_INSTANCES: dict[str, int] = {"trn2u.48xlarge": 4}
ULTRASERVER_TYPES = frozenset(ULTRASERVER_INSTANCES)


class TopologyKind(enum.StrEnum):
    TREE = "tree"  # Slurm's topology/tree
    BLOCK = "block"  # Slurm's topology/block
    NONE = "none"


@dataclass(frozen=True)
class PoolTopology:
    kind: TopologyKind
    why: str
    layers: int | None  # network nodes EC2 returns for the type; None when it returns none
    block_size: int | None = None  # instances per UltraServer, for a block pool


def covered(instance_type: str) -> bool:
    return instance_type in LAYERS


def pool_topology(choice: TopologyChoice, instance_type: str, max_nodes: int) -> PoolTopology:
    """What a pool of ``max_nodes`` at most of ``instance_type`` gets for ``choice`` (the checks
    refuse a tree or block EC2 cannot give, so this only explains)."""
    layers = LAYERS.get(instance_type)
    if choice is TopologyChoice.OFF:
        return PoolTopology(TopologyKind.NONE, "turned off in the definition", layers)
    if layers is None:
        return PoolTopology(
            TopologyKind.NONE, f"EC2 reports no instance topology for {instance_type}", None
        )
    if max_nodes < 2:
        return PoolTopology(TopologyKind.NONE, "one node: nothing to place", layers)
    size = ULTRASERVER_INSTANCES.get(instance_type)
    if size is not None and choice in (TopologyChoice.BLOCK, TopologyChoice.AUTO):
        return PoolTopology(
            TopologyKind.BLOCK,
            f"{instance_type} comes in UltraServers of {size} instances, each a capacity block "
            "EC2 names: a partition of their own schedules whole UltraServers; the pool's "
            "partition keeps the tree",
            layers,
            size,
        )
    return PoolTopology(
        TopologyKind.TREE,
        f"EC2 reports {layers} network layers for {instance_type}: jobs are kept under the "
        "fewest switches",
        layers,
    )


# Slurm places a node in the tree by itself from 25.05 on: `scontrol update ... Topology=` and
# a dynamic node's `slurmd --conf "Topology=..."` (RELEASE_NOTES.md of 25.05: "Dynamic nodes
# can be dynamically added to the network topologies"; topology.html, "Dynamic Topology").
# Before it, a node joins the tree only through topology.conf and a reconfigure, and a dynamic
# node (slurmd -Z) is under no switch at all: no multi-node job would reach it. So older
# releases get no topology plugin (proven in tests/slurm/test_topology.py: 24.11 refuses the
# update).
PER_NODE_TOPOLOGY_SINCE = "25.05"


@dataclass(frozen=True)
class ClusterTopology:
    """Whether Slurm's topology/tree is configured for the cluster, and why (not)."""

    tree: bool
    why: str


def cluster_topology(pools: list[PoolTopology], oldest_slurm_line: str) -> ClusterTopology:
    """topology/tree when some pool is placed (tree or block: a block pool's nodes are placed
    in the tree too, and its UltraServers get a block topology beside it) and every daemon's
    release can place nodes as they join (``oldest_slurm_line``: the oldest release line any
    daemon runs; multiple topologies, topology.yaml, come with the same release)."""
    placed = [p for p in pools if p.kind is not TopologyKind.NONE]
    if not placed:
        return ClusterTopology(False, "no pool has a topology EC2 can give")
    if _line_key(oldest_slurm_line) < _line_key(PER_NODE_TOPOLOGY_SINCE):
        return ClusterTopology(
            False,
            f"Slurm {oldest_slurm_line} cannot place nodes as they join (per-node topology "
            f"needs {PER_NODE_TOPOLOGY_SINCE} or later): scheduling without topology",
        )
    return ClusterTopology(
        True,
        "topology/tree: the head places each node under its network nodes as it joins",
    )


def _line_key(line: str) -> tuple[int, ...]:
    return tuple(int(part) for part in line.split("."))
