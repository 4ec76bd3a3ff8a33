"""Slurm's network topology as render writes it and the head's controller keeps it: the switch
names slurmstack adds to EC2's network nodes, the file, and a node's Topology= value."""

from __future__ import annotations

from collections.abc import Sequence

from .paths import SLURM_DIR

__all__ = [
    "ROOT_SWITCH",
    "TOPOLOGY_CONF_PATH",
    "UNPLACED_SWITCH",
    "UNPLACED_TOPOLOGY",
    "topology_value",
]

TOPOLOGY_CONF_PATH = f"{SLURM_DIR}/topology.conf"
# Every top-layer network node hangs under one root switch, so any set of nodes is connected;
# nodes EC2 placed nowhere (an uncovered type, an instance not running yet, a pool without
# topology, a node not placed yet) sit under a leaf of their own beside them.
ROOT_SWITCH = "slurmstack-root"
UNPLACED_SWITCH = "slurmstack-unplaced"


def topology_value(path: Sequence[str]) -> str:
    """A node's Topology= (scontrol update, slurmd --conf) under ``path``, EC2's network nodes
    top layer first: the tree's name (topology.conf's is "default"), the root, then the path;
    an empty path puts the node under the unplaced leaf. Slurm makes the intermediate switches
    it names (topology.html, "Dynamic Topology"), and `scontrol show node` prints the value the
    same way (topology_tree.c, get_topology_str)."""
    switches = [ROOT_SWITCH, *path] if path else [ROOT_SWITCH, UNPLACED_SWITCH]
    return "default:" + ":".join(switches)


UNPLACED_TOPOLOGY = topology_value(())
