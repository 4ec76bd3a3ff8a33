"""leaves: which pairs acceptance runs inside and between leaf switches, in waves of disjoint
pairs, and what it concludes."""

from __future__ import annotations

from collections.abc import Sequence

from slurmstack.contract import UNPLACED_TOPOLOGY, topology_value
from slurmstack.node.workload import leaves
from slurmstack.node.workload.pairs import Pair, PairResult


def test_a_nodes_leaf_is_the_last_switch_and_unplaced_nodes_have_none() -> None:
    assert leaves.leaf_of(topology_value(["t", "s", "l7"])) == "l7"
    assert leaves.leaf_of(UNPLACED_TOPOLOGY) is None
    assert leaves.leaf_of("") is None
    groups = leaves.by_leaf(
        {"a": topology_value(["t", "s", "l1"]), "b": UNPLACED_TOPOLOGY,
         "c": topology_value(["t", "s", "l1"]), "d": topology_value(["t", "s", "l2"])}
    )  # fmt: skip
    assert groups == {"l1": ["a", "c"], "l2": ["d"]}


def test_pairs_inside_every_leaf_of_two_and_between_neighbours() -> None:
    planned = leaves.leaf_pairs({"l1": ["a", "b", "c"], "l2": ["d"], "l3": ["e", "f"]})
    assert planned.within == {("a", "b"): "l1", ("e", "f"): "l3"}
    assert planned.across == {("c", "d"): ("l1", "l2"), ("d", "e"): ("l2", "l3")}


def test_waves_never_give_a_node_two_pairs_at_once() -> None:
    pairs = [("c", "d"), ("d", "e"), ("e", "f"), ("a", "b")]
    waves = leaves.waves(pairs)
    assert waves == [[("c", "d"), ("e", "f"), ("a", "b")], [("d", "e")]]
    for wave in waves:
        nodes = [n for pair in wave for n in pair]
        assert len(nodes) == len(set(nodes))


def test_the_diagnosis_points_above_the_leaves_only_when_every_pair_inside_passes() -> None:
    groups = {"l1": ["a", "b"], "l2": ["c", "d"]}

    def runner(slow: set[str], spans_slow: bool):
        def run(wave: Sequence[Pair]) -> dict[Pair, PairResult]:
            out = {}
            for pair in wave:
                across = (pair[0] in groups["l1"]) != (pair[1] in groups["l1"])
                bad = bool(set(pair) & slow) or (spans_slow and across)
                out[pair] = PairResult(not bad, "slow" if bad else "fine")
            return out

        return run

    spine = leaves.measure(groups, runner(set(), True))
    assert spine.spine_suspected and "above the leaves" in spine.diagnosis
    node = leaves.measure(groups, runner({"c"}, False))
    assert not node.spine_suspected and node.diagnosis.startswith("slow inside leaf switch l2")
    fine = leaves.measure(groups, runner(set(), False))
    assert not fine.spine_suspected and fine.diagnosis == "inside and between leaf switches alike"
