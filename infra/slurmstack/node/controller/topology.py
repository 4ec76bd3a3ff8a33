"""Slurm's network topology from EC2's (issue 27): reading EC2's answers, the tree they give,
the per-node updates the controller makes, and which block an UltraServer's node goes in.

EC2's DescribeInstanceTopology gives each running instance of a supported type its network
nodes, top layer first, the last being the node the instance connects to (3 layers, or 4 for
some types; EC2 User Guide, "How Amazon EC2 topology works"). An instance of an unsupported type,
or not yet running, gets none. Two instances under one bottom node are the closest there are.

Slurm's topology/tree takes switches: a leaf switch lists its nodes, a higher one its child
switches (topology.conf(5)). Every network node becomes a switch of its name; all top-layer
switches hang under one root switch, and nodes EC2 placed nowhere under a leaf of their own
beside them, so any set of nodes is still connected: a node without an answer costs its jobs
the topology's preference, never their scheduling (the failure issue 27 names: a topology
plugin with nodes it cannot place).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...contract import ROOT_SWITCH, UNPLACED_SWITCH, topology_value

# DescribeInstanceTopology takes at most 100 instance ids a call (EC2 API Reference,
# "DescribeInstanceTopology": InstanceIds, "Maximum 100 explicitly specified instance IDs").
IDS_PER_CALL = 100


@dataclass(frozen=True)
class Placement:
    instance_id: str
    instance_type: str
    network_nodes: tuple[str, ...]  # top layer first; () when EC2 gave none
    capacity_block: str | None  # UltraServer capacity blocks only


def describe_topology(ec2: Any, instance_ids: Iterable[str]) -> dict[str, Placement]:
    """Each instance's placement, by instance id: one call per hundred ids, every page of each
    (EC2 may page an answer even for explicit ids). An instance EC2 does not list is absent."""
    ids = sorted(set(instance_ids))
    out: dict[str, Placement] = {}
    for start in range(0, len(ids), IDS_PER_CALL):
        request: dict[str, Any] = {"InstanceIds": ids[start : start + IDS_PER_CALL]}
        while True:
            page = ec2.describe_instance_topology(**request)
            for item in page.get("Instances", []):
                out[item["InstanceId"]] = Placement(
                    instance_id=item["InstanceId"],
                    instance_type=item.get("InstanceType", ""),
                    network_nodes=tuple(item.get("NetworkNodes") or ()),
                    capacity_block=item.get("CapacityBlockId") or None,
                )
            token = page.get("NextToken")
            if not token:
                break
            request["NextToken"] = token
    return out


@dataclass(frozen=True)
class Tree:
    """topology.conf for topology/tree, and what could not be placed."""

    lines: tuple[str, ...]
    unplaced: tuple[str, ...]  # Slurm node names under UNPLACED_SWITCH
    conflicts: tuple[str, ...]  # network nodes EC2 gave two parents (kept under the first)

    def text(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)


def tree_topology(nodes: Mapping[str, Sequence[str]]) -> Tree:
    """topology.conf from each Slurm node's network nodes (top layer first; empty when EC2
    gave none). Sorted throughout: the same answer renders the same file."""
    below: dict[str, set[str]] = {}  # switch -> child switches
    members: dict[str, set[str]] = {}  # leaf switch -> Slurm nodes
    parent: dict[str, str] = {}
    tops: set[str] = set()
    conflicts: set[str] = set()
    unplaced: list[str] = []
    for name, path in sorted(nodes.items()):
        if not path:
            unplaced.append(name)
            continue
        tops.add(path[0])
        for upper, lower in itertools.pairwise(path):
            if parent.setdefault(lower, upper) != upper:
                conflicts.add(lower)  # kept under its first parent
                continue
            below.setdefault(upper, set()).add(lower)
        members.setdefault(path[-1], set()).add(name)
    # A switch has nodes or child switches, never both (switch_record.c): a network node that
    # is some instances' bottom node and others' parent (types of 3 and 4 layers) gets a leaf
    # of its own for its instances.
    for switch in sorted(set(members) & set(below)):
        leaf = f"{switch}-nodes"
        members[leaf] = members.pop(switch)
        below[switch].add(leaf)
    lines = [f"SwitchName={s} Nodes={','.join(sorted(m))}" for s, m in sorted(members.items())]
    lines += [f"SwitchName={s} Switches={','.join(sorted(c))}" for s, c in sorted(below.items())]
    if unplaced:
        lines.append(f"SwitchName={UNPLACED_SWITCH} Nodes={','.join(unplaced)}")
    top = sorted(tops) + ([UNPLACED_SWITCH] if unplaced else [])
    if top:
        lines.append(f"SwitchName={ROOT_SWITCH} Switches={','.join(top)}")
    return Tree(tuple(lines), tuple(unplaced), tuple(sorted(conflicts)))


def placement_updates(
    wanted: Mapping[str, Sequence[str]],
    applied: Mapping[str, str],
    blocks: Mapping[str, tuple[str, str]] | None = None,
) -> dict[str, list[str]]:
    """The per-node updates that bring Slurm from ``applied`` (node -> Topology= value last
    set) to ``wanted`` (node -> network nodes; ``blocks``: node -> (block topology, block)
    for UltraServer nodes): Topology= value -> the nodes to set to it, so nodes that join
    under one leaf (and in one UltraServer) take one scontrol call together; nodes already
    placed are left alone (a node is moved only when EC2's answer for it changed)."""
    blocks = blocks or {}
    updates: dict[str, list[str]] = {}
    for name in sorted(set(wanted) | set(blocks)):
        value = topology_value(wanted.get(name, ()), blocks.get(name))
        if applied.get(name) != value:
            updates.setdefault(value, []).append(name)
    return updates


def block_of(topology: str, value: str) -> str | None:
    """The block a node's Topology= value puts it in, in block topology ``topology``."""
    for part in value.split(","):
        name, _, rest = part.partition(":")
        if name == topology and rest:
            return rest
    return None


def assign_blocks(
    joining: Mapping[str, str | None],
    occupied: Mapping[str, str | None],
    listed: Sequence[str],
) -> dict[str, str]:
    """Which block each joining node of an UltraServer pool goes in. ``joining``: node -> its
    instance's CapacityBlockId (None: EC2 gave none); ``occupied``: block -> the CapacityBlockId
    of a node already in it (None when EC2 did not say); ``listed``: the pool's blocks, in
    topology.yaml's order. A node goes in the block that already holds its UltraServer, else
    in the first block nobody holds; a node without a CapacityBlockId, or for whose
    UltraServer no block is left, gets none (the pool's own partition still uses it)."""
    by_capacity = {capacity: block for block, capacity in occupied.items() if capacity}
    taken = set(occupied)
    out: dict[str, str] = {}
    for name, capacity in sorted(joining.items()):
        if not capacity:
            continue
        block = by_capacity.get(capacity)
        if block is None:
            block = next((b for b in listed if b not in taken), None)
            if block is None:
                continue
            by_capacity[capacity] = block
            taken.add(block)
        out[name] = block
    return out
