"""Finding the slow node or pair with two-node runs, on simulated pools: every wave is
answered by a model of the fabric (a slow node slows every run it is in; a slow pair only the
run of those two), and the waves themselves are checked (disjoint pairs, nothing repeated)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from slurmstack.node.workload import pairs
from slurmstack.node.workload.pairs import Pair, PairResult

pytestmark = pytest.mark.workload


class Fabric:
    """A pool's fabric: two-node all-reduces at 450 GB/s, but 140 with a slow node and 60
    between the two ends of a slow pair. Records every wave it is asked to run."""

    def __init__(
        self,
        slow: set[str] = frozenset(),
        slow_pairs: set[frozenset[str]] = frozenset(),
        broken: bool = False,
    ) -> None:
        self.slow = set(slow)
        self.slow_pairs = set(slow_pairs)
        self.broken = broken
        self.waves: list[list[Pair]] = []

    def busbw(self, pair: Pair) -> float:
        if self.broken or frozenset(pair) in self.slow_pairs:
            return 60.0
        return 140.0 if set(pair) & self.slow else 450.0

    def __call__(self, wave: Sequence[Pair]) -> dict[Pair, PairResult]:
        nodes = [n for pair in wave for n in pair]
        assert len(nodes) == len(set(nodes)), f"a node in two pairs of one wave: {wave}"
        self.waves.append(list(wave))
        out = {}
        for pair in wave:
            busbw = self.busbw(pair)
            ok = busbw >= 355
            out[pair] = PairResult(
                ok, f"{busbw:.0f} GB/s busbw, {'at least' if ok else 'below'} 355"
            )
        return out

    def every_run(self) -> list[frozenset[str]]:
        return [frozenset(p) for wave in self.waves for p in wave]


NODES = [f"train-{i}" for i in range(1, 9)]


def test_a_slow_node_is_found_in_two_waves_and_its_partner_cleared() -> None:
    fabric = Fabric(slow={"train-5"})
    found = pairs.locate(NODES, fabric)
    assert fabric.waves[0] == [
        ("train-1", "train-2"),
        ("train-3", "train-4"),
        ("train-5", "train-6"),
        ("train-7", "train-8"),
    ]
    assert found.waves == 2
    (slow,) = found.slow
    assert slow.node == "train-5" and slow.detail == "140 GB/s busbw, below 355"
    assert slow.partner in {"train-1", "train-2", "train-3", "train-4", "train-7", "train-8"}
    assert found.slow_pairs == [] and found.unresolved == []
    assert sorted(found.good) == sorted(n for n in NODES if n != "train-5")
    assert [e.node for e in found.to_drain()] == ["train-5"]
    assert len(fabric.every_run()) == len(set(fabric.every_run())), "a pair ran twice"


def test_a_slow_pair_is_found_and_both_ends_are_named() -> None:
    """The brief's case: each node is fine with others, the two together are slow."""
    fabric = Fabric(slow_pairs={frozenset({"train-3", "train-4"})})
    found = pairs.locate(NODES, fabric)
    assert found.slow == [] and found.unresolved == []
    assert sorted((e.node, e.partner) for e in found.slow_pairs) == [
        ("train-3", "train-4"),
        ("train-4", "train-3"),
    ]
    assert {e.detail for e in found.slow_pairs} == {"60 GB/s busbw, below 355"}
    assert sorted(e.node for e in found.to_drain()) == ["train-3", "train-4"]
    assert found.waves == 2 and set(found.good) == set(NODES)


def test_two_slow_nodes_in_one_pair_are_both_found() -> None:
    fabric = Fabric(slow={"train-1", "train-2"})
    found = pairs.locate(NODES, fabric)
    assert sorted(e.node for e in found.slow) == ["train-1", "train-2"]
    assert found.unresolved == [] and found.slow_pairs == []


def test_an_odd_node_out_is_tried_with_a_good_one() -> None:
    fabric = Fabric(slow={"train-7"})
    found = pairs.locate(NODES[:7], fabric)
    assert [e.node for e in found.slow] == ["train-7"]
    assert "train-7" not in [n for p in fabric.waves[0] for n in p]


def test_three_nodes_one_slow_needs_the_third_pairing() -> None:
    """No pair passes at first: the uncleared nodes are tried with each other until one pair
    passes and clears a partner to judge by."""
    fabric = Fabric(slow={"a"})
    found = pairs.locate(["a", "b", "c"], fabric)
    assert [e.node for e in found.slow] == ["a"] and sorted(found.good) == ["b", "c"]
    assert found.waves == 3


def test_when_every_pair_fails_nothing_is_drained() -> None:
    """Not one node's fault (a configuration, the whole fabric): stop and drain nothing."""
    fabric = Fabric(broken=True)
    found = pairs.locate(NODES, fabric)
    assert found.to_drain() == [] and found.good == []
    assert sorted(found.unresolved) == sorted(NODES)
    assert found.waves == pairs.SYSTEMIC_AFTER_WAVES


def test_two_nodes_that_fail_together_cannot_be_told_apart() -> None:
    found = pairs.locate(["a", "b"], Fabric(slow={"a"}))
    assert found.to_drain() == [] and sorted(found.unresolved) == ["a", "b"] and found.waves == 1


def test_next_wave_never_repeats_a_pair_nor_uses_a_node_twice() -> None:
    tried = {frozenset({"a", "g1"})}
    wave = pairs.next_wave(["a", "b", "c"], ["g1", "g2"], tried)
    # c waits: both good nodes are taken in this wave, and so are the other uncleared ones.
    assert wave == [("a", "g2"), ("b", "g1")]
    assert pairs.next_wave(["a", "b"], [], {frozenset({"a", "b"})}) == []
