"""Find the slow node, or the slow pair, of a pool whose all-reduce failed: two-node runs.

A ring all-reduce runs at the speed of its slowest link, so a pool-wide run says only that
something is slow. Two-node runs say which nodes:

1. the first wave pairs every node with another (disjoint pairs run at the same time); a node
   in a pair that passes is good;
2. each later wave pairs every node not yet cleared with a good node (or, while there is none,
   with another uncleared node it has not been tried with), as many pairs at a time as there
   are partners, until every node is cleared or judged, or no untried pairing is left;
3. a node that never passed and failed with a good partner is slow; two good nodes whose run
   together failed are a slow pair; a node tried with no good partner is unresolved.

Nothing is concluded from nodes that only failed together: if every pair fails, the cause is
the pool's fabric or configuration, not one node, and nothing is drained. ``locate`` is pure:
it takes the function that runs a wave (``RunWave``), so it is tested on simulated pools.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Pair = tuple[str, str]
# With no passing pair after this many waves, the fault is not one node (or two): stop.
SYSTEMIC_AFTER_WAVES = 3


@dataclass(frozen=True)
class PairResult:
    ok: bool
    detail: str  # e.g. "142 GB/s busbw, below 355", or what went wrong


RunWave = Callable[[Sequence[Pair]], dict[Pair, PairResult]]


@dataclass(frozen=True)
class Evidence:
    """Why a node (or pair) is judged slow: the run that failed and its partner."""

    node: str
    partner: str
    detail: str


@dataclass
class Findings:
    slow: list[Evidence] = field(default_factory=list)  # nodes to drain
    slow_pairs: list[Evidence] = field(default_factory=list)  # both ends to drain
    unresolved: list[str] = field(default_factory=list)  # never tried with a good node
    good: list[str] = field(default_factory=list)
    runs: list[tuple[Pair, PairResult]] = field(default_factory=list)  # every run, in order
    waves: int = 0

    def to_drain(self) -> list[Evidence]:
        """Each node to drain once, with the evidence against it."""
        out: dict[str, Evidence] = {}
        for evidence in [*self.slow, *self.slow_pairs]:
            out.setdefault(evidence.node, evidence)
        return list(out.values())


def first_wave(nodes: Sequence[str]) -> list[Pair]:
    """Disjoint pairs of neighbours in the given order (an odd node out waits)."""
    return [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]


def _key(a: str, b: str) -> frozenset[str]:
    return frozenset((a, b))


def next_wave(
    unresolved: Sequence[str], good: Sequence[str], tried: set[frozenset[str]]
) -> list[Pair]:
    """Pairs for the nodes not yet cleared: each with a good node it has not been tried with,
    else with another uncleared node it has not been tried with; every node in one pair at most
    (the pairs of a wave run at the same time)."""
    busy: set[str] = set()
    wave: list[Pair] = []
    for node in unresolved:
        if node in busy:
            continue
        candidates = [g for g in good if g not in busy and _key(node, g) not in tried]
        candidates += [
            u for u in unresolved if u != node and u not in busy and _key(node, u) not in tried
        ]
        if candidates:
            partner = candidates[0]
            wave.append((node, partner))
            busy |= {node, partner}
    return wave


def locate(nodes: Sequence[str], run_wave: RunWave, max_waves: int = 8) -> Findings:
    """Run waves of two-node all-reduces over ``nodes`` and judge each node (module doc)."""
    findings = Findings()
    results: dict[frozenset[str], tuple[Pair, PairResult]] = {}
    good: list[str] = []
    wave = first_wave(nodes)
    while wave and findings.waves < max_waves:
        if findings.waves >= SYSTEMIC_AFTER_WAVES and not good:
            break  # no pair passes: the pool's fabric or configuration, not a node
        findings.waves += 1
        outcome = run_wave(wave)
        for pair in wave:
            result = outcome.get(pair) or PairResult(False, "no result")
            results[_key(*pair)] = (pair, result)
            findings.runs.append((pair, result))
            if result.ok:
                good += [n for n in pair if n not in good]
        unresolved = [n for n in nodes if n not in good and not _failed_with_good(n, good, results)]
        wave = next_wave(unresolved, good, set(results))
    for node in nodes:
        if node in good:
            continue
        evidence = _failed_with_good(node, good, results)
        if evidence is not None:
            findings.slow.append(evidence)
        else:
            findings.unresolved.append(node)
    for pair, result in results.values():
        if not result.ok and pair[0] in good and pair[1] in good:
            findings.slow_pairs.append(Evidence(pair[0], pair[1], result.detail))
            findings.slow_pairs.append(Evidence(pair[1], pair[0], result.detail))
    findings.good = [n for n in nodes if n in good]
    return findings


def _failed_with_good(
    node: str, good: Sequence[str], results: dict[frozenset[str], tuple[Pair, PairResult]]
) -> Evidence | None:
    for partner in good:
        found = results.get(_key(node, partner))
        if found is not None and not found[1].ok:
            return Evidence(node, partner, found[1].detail)
    return None
