"""Bandwidth within and across leaf switches (issue 27): where the head placed a pool's nodes in
Slurm's topology, acceptance runs two-node all-reduces inside each leaf and between leaves, so
a slow spine is told from a slow node.

A ring all-reduce over the whole pool runs at the speed of its slowest link: a slow node and a
congested or faulty link between leaf switches look the same there. Pairs inside one leaf cross
only that leaf switch; pairs from two leaves also cross what is above them. Every pair inside a
leaf passing while pairs between leaves fail points above the leaves, and nothing is drained
for it; a pair failing inside a leaf points at its nodes (or that one switch), which the
bisection of pairs.py then looks for. Pure: the wave runner is passed in (pairs.RunWave).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...contract import UNPLACED_SWITCH
from .pairs import Pair, PairResult, RunWave


def leaf_of(topology: str) -> str | None:
    """The leaf switch of a node's Topology= value (``default:<root>:...:<leaf>``); None for
    a node not placed (under the unplaced leaf, or none)."""
    switches = topology.split(":")[1:]
    if len(switches) < 2 or switches[-1] == UNPLACED_SWITCH:
        return None
    return switches[-1]


def by_leaf(topologies: Mapping[str, str]) -> dict[str, list[str]]:
    """Leaf switch -> its nodes (in the order given), for the placed nodes of ``topologies``
    (node -> Topology= value)."""
    groups: dict[str, list[str]] = {}
    for node, topology in topologies.items():
        leaf = leaf_of(topology)
        if leaf is not None:
            groups.setdefault(leaf, []).append(node)
    return groups


@dataclass(frozen=True)
class LeafPairs:
    within: dict[Pair, str]  # a pair inside one leaf -> that leaf
    across: dict[Pair, tuple[str, str]]  # a pair from two leaves -> the two leaves


def leaf_pairs(groups: Mapping[str, Sequence[str]]) -> LeafPairs:
    """One pair inside every leaf of two nodes or more; one pair between each leaf and the next
    (sorted by name), from nodes the pairs inside leaves do not use where a leaf has more."""
    leaves = sorted(groups)
    within = {(groups[leaf][0], groups[leaf][1]): leaf for leaf in leaves if len(groups[leaf]) > 1}
    across: dict[Pair, tuple[str, str]] = {}
    for left, right in itertools.pairwise(leaves):
        across[(groups[left][-1], groups[right][0])] = (left, right)
    return LeafPairs(within, across)


def waves(pairs: Sequence[Pair]) -> list[list[Pair]]:
    """``pairs`` in waves of disjoint pairs (whole nodes: a node runs one pair at a time)."""
    left = list(pairs)
    out: list[list[Pair]] = []
    while left:
        busy: set[str] = set()
        wave = []
        for pair in left:
            if not busy & set(pair):
                wave.append(pair)
                busy.update(pair)
        out.append(wave)
        left = [p for p in left if p not in wave]
    return out


@dataclass
class LeafBandwidth:
    within: list[dict[str, Any]] = field(default_factory=list)
    across: list[dict[str, Any]] = field(default_factory=list)
    diagnosis: str = ""

    @property
    def spine_suspected(self) -> bool:
        """Every pair inside a leaf passed and some pair between leaves failed."""
        return all(r["ok"] for r in self.within) and any(not r["ok"] for r in self.across)

    def as_dict(self) -> dict[str, Any]:
        return {"within": self.within, "across": self.across, "diagnosis": self.diagnosis}


def measure(groups: Mapping[str, Sequence[str]], run_wave: RunWave) -> LeafBandwidth:
    """Run the pairs of ``leaf_pairs`` (inside leaves first, then between) and say where the
    slow part is."""
    planned = leaf_pairs(groups)
    results: dict[Pair, PairResult] = {}
    for wave in [*waves(list(planned.within)), *waves(list(planned.across))]:
        results.update(run_wave(wave))
    out = LeafBandwidth()
    for pair, leaf in planned.within.items():
        out.within.append({"leaf": leaf, "pair": list(pair), **_result(results[pair])})
    for pair, leaves in planned.across.items():
        out.across.append({"leaves": list(leaves), "pair": list(pair), **_result(results[pair])})
    slow_inside = [r["leaf"] for r in out.within if not r["ok"]]
    slow_between = ["-".join(r["leaves"]) for r in out.across if not r["ok"]]
    if out.spine_suspected:
        out.diagnosis = (
            f"slow between leaf switches ({', '.join(slow_between)}) while every pair inside a "
            "leaf passes: the network above the leaves, not a node"
        )
    elif slow_inside:
        out.diagnosis = (
            f"slow inside leaf switch {', '.join(slow_inside)}: a node there (or that switch)"
        )
    else:
        out.diagnosis = "inside and between leaf switches alike"
    return out


def _result(result: PairResult) -> dict[str, Any]:
    return {"ok": result.ok, "detail": result.detail}
