"""Slurm's network topology as render writes it and the head's controller keeps it: the switch
names slurmstack adds to EC2's network nodes, the files, the block topology of an UltraServer
pool, and a node's Topology= value."""

from __future__ import annotations

from collections.abc import Sequence

from .paths import SLURM_DIR

__all__ = [
    "ROOT_SWITCH",
    "TOPOLOGY_CONF_PATH",
    "TOPOLOGY_YAML_PATH",
    "TREE_TOPOLOGY",
    "UNPLACED_SWITCH",
    "UNPLACED_TOPOLOGY",
    "block_names",
    "block_topology",
    "topology_value",
]

TOPOLOGY_CONF_PATH = f"{SLURM_DIR}/topology.conf"
# A cluster with an UltraServer pool has two kinds of topology, which only topology.yaml can
# hold (Slurm 25.05 and later; when it exists, topology.conf is not read: topology.yaml(5)).
TOPOLOGY_YAML_PATH = f"{SLURM_DIR}/topology.yaml"
# The tree's name: topology.conf's single topology is "default", and topology.yaml names its
# tree the same, so a node's Topology= value reads the same in either file.
TREE_TOPOLOGY = "default"
# Every top-layer network node hangs under one root switch, so any set of nodes is connected;
# nodes EC2 placed nowhere (an uncovered type, an instance not running yet, a pool without
# topology, a node not placed yet) sit under a leaf of their own beside them.
ROOT_SWITCH = "slurmstack-root"
UNPLACED_SWITCH = "slurmstack-unplaced"


def block_topology(pool: str) -> str:
    """The block topology of an UltraServer pool, and the name of the partition that schedules
    by it (pool names have no underscore, so it is no other pool's name)."""
    return f"{pool}_blocks"


def block_names(pool: str, count: int) -> tuple[str, ...]:
    """The blocks topology.yaml lists for the pool, one per UltraServer it can hold: Slurm can
    move a node into a block the file lists, never make one (scontrol update answers
    "Requested topology configuration is not available"), so they are listed empty up front."""
    return tuple(f"{pool}-u{index}" for index in range(1, count + 1))


def topology_value(path: Sequence[str], block: tuple[str, str] | None = None) -> str:
    """A node's Topology= (scontrol update, slurmd --conf) under ``path``, EC2's network nodes
    top layer first: the tree's name, the root, then the path; an empty path puts the node
    under the unplaced leaf. ``block`` (block topology, block) adds the node's UltraServer.
    Slurm makes the intermediate switches it names (topology.html, "Dynamic Topology"), and
    `scontrol show node` prints the value the same way (topology_tree.c, get_topology_str).
    The value names every topology the node is in: an update naming only one takes the node
    out of the others (seen on 26.05.5)."""
    switches = [ROOT_SWITCH, *path] if path else [ROOT_SWITCH, UNPLACED_SWITCH]
    value = f"{TREE_TOPOLOGY}:" + ":".join(switches)
    return value if block is None else f"{value},{block[0]}:{block[1]}"


UNPLACED_TOPOLOGY = topology_value(())
