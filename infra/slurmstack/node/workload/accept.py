"""accept: the acceptance run after a deploy, one verdict per pool.

Run on the head node by any user (`slurmstack-accept`): every step is a Slurm job of the
invoking user on the pool's free nodes. Per pool: the node check on every node (node_check),
then the fabric: nccl-tests' all_reduce_perf across all of them, judged against the pool's
threshold (GPU pools), or the MPI example's all-reduce (CPU pools). With ``bisect``, a failed
all-reduce is followed by two-node runs that find the slow node or pair (pairs.locate); those
nodes are drained with the documented reason when the invoking user may drain (root or a Slurm
operator), otherwise the report gives the command for one. Where the pool's nodes sit under
two leaf switches or more of Slurm's topology, pairs inside and between leaves tell a slow
spine from a slow node (leaves).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ...contract import (
    ACCEPTANCE_PATH,
    Acceptance,
    Check,
    Collective,
    PoolAcceptance,
    load_document,
    reason,
)
from ..context import AgentError, Context
from . import leaves, nccl_tests, pairs, steps


@dataclass(frozen=True)
class Options:
    pools: tuple[str, ...] = ()  # empty: every pool
    bisect: bool = False
    drain: bool = True  # drain what bisection finds (when allowed)
    min_busbw_gbps: float | None = None  # instead of the pool's threshold


@dataclass
class PoolReport:
    pool: str
    verdict: str = "pass"  # pass, fail or skip
    nodes: list[str] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)  # "node (state)"
    node_check: dict[str, Any] = field(default_factory=dict)
    fabric: dict[str, Any] = field(default_factory=dict)
    bisect: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def fail(self, note: str) -> None:
        self.verdict = "fail"
        self.notes.append(note)


def load(ctx: Context) -> Acceptance:
    path = ctx.path(ACCEPTANCE_PATH)
    if not path.exists():
        raise AgentError(f"{ACCEPTANCE_PATH} is missing: is this a slurmstack node?")
    return load_document(Acceptance, path.read_text())


def node_checks(ctx: Context, pool: PoolAcceptance, nodes: list[str], report: PoolReport) -> None:
    result = ctx.sh(*steps.node_check_argv(pool, nodes), check=False)
    seen: dict[str, Any] = {}
    for line in result.stdout.splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if isinstance(document, dict) and "node" in document:
            seen[document["node"]] = document
    failed = {
        node: [f"{c['name']}: {c['detail']}" for c in doc["checks"] if not c["ok"]]
        for node, doc in seen.items()
        if not doc["ok"]
    }
    missing = [n for n in nodes if n not in seen]
    report.node_check = {"ok": not failed and not missing, "failed": failed, "no_answer": missing}
    for node, problems in sorted(failed.items()):
        report.fail(f"node check failed on {node}: {'; '.join(problems)}")
    if missing:
        detail = steps.output(result).strip().splitlines()[-1:] or ["no output"]
        report.fail(f"node check gave no answer from {', '.join(missing)}: {detail[0]}")


def allreduce(
    ctx: Context, pool: PoolAcceptance, nodes: Sequence[str], minimum: float | None
) -> nccl_tests.Verdict:
    result = ctx.sh(*steps.allreduce_argv(pool, list(nodes)), check=False)
    message = pool.threshold.message_bytes if pool.threshold else 2 * 1024**3
    return nccl_tests.judge(nccl_tests.parse(steps.output(result)), minimum, message)


def mpi(ctx: Context, pool: PoolAcceptance, nodes: list[str]) -> tuple[bool, str]:
    result = ctx.sh(*steps.mpi_argv(pool, nodes), check=False)
    for line in reversed(result.stdout.splitlines()):
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if isinstance(document, dict) and "ok" in document:
            hosts = len(set(document.get("hosts", [])))
            summary = f"{document.get('ranks')} ranks on {hosts} nodes"
            return bool(document["ok"]) and result.returncode == 0, summary
    tail = steps.output(result).strip().splitlines()[-1:] or ["no output"]
    return False, f"the MPI all-reduce did not report (exit {result.returncode}): {tail[0]}"


def pair_runner(ctx: Context, pool: PoolAcceptance, minimum: float | None) -> pairs.RunWave:
    """Two-node all-reduces, a wave of disjoint pairs at a time."""

    def run_wave(wave: Sequence[pairs.Pair]) -> dict[pairs.Pair, pairs.PairResult]:
        with ThreadPoolExecutor(max_workers=max(len(wave), 1)) as workers:
            verdicts = list(workers.map(lambda p: allreduce(ctx, pool, p, minimum), wave))
        return {p: pairs.PairResult(v.ok, v.detail) for p, v in zip(wave, verdicts, strict=True)}

    return run_wave


def locate_slow(
    ctx: Context, pool: PoolAcceptance, nodes: list[str], minimum: float | None
) -> pairs.Findings:
    return pairs.locate(nodes, pair_runner(ctx, pool, minimum))


def leaf_bandwidth(
    ctx: Context, pool: PoolAcceptance, nodes: list[str], minimum: float | None
) -> leaves.LeafBandwidth | None:
    """Pairs inside and between leaf switches, where the nodes sit under two leaves or more
    of Slurm's topology (docs/topology.md); None otherwise."""
    groups = leaves.by_leaf(steps.node_topologies(ctx, nodes))
    if len(groups) < 2:
        return None
    return leaves.measure(groups, pair_runner(ctx, pool, minimum))


def drain(ctx: Context, evidence: pairs.Evidence) -> dict[str, Any]:
    text = reason(Check.NCCL_ALLREDUCE, f"{evidence.detail} (pair with {evidence.partner})")
    command = ["scontrol", "update", f"NodeName={evidence.node}", "State=DRAIN", f"Reason={text}"]
    result = ctx.sh(*command, check=False)
    entry: dict[str, Any] = {
        "node": evidence.node,
        "reason": text,
        "drained": result.returncode == 0,
    }
    if result.returncode != 0:
        entry["error"] = (result.stderr or result.stdout).strip()
        entry["command"] = " ".join(command[:4]) + f" Reason='{reason}'"
    return entry


def fabric(
    ctx: Context, pool: PoolAcceptance, nodes: list[str], options: Options, report: PoolReport
) -> None:
    if pool.collective is Collective.NONE:
        report.fabric = {"kind": "none", "detail": "no collective test for Neuron devices here"}
        return
    if len(nodes) < 2:
        report.fabric = {"kind": pool.collective.value, "detail": "one node: nothing between nodes"}
        return
    if pool.collective is Collective.MPI:
        ok, detail = mpi(ctx, pool, nodes)
        report.fabric = {"kind": "mpi", "ok": ok, "detail": detail}
        if not ok:
            report.fail(f"MPI all-reduce: {detail}")
        return
    minimum = options.min_busbw_gbps
    if minimum is None and pool.threshold is not None:
        minimum = pool.threshold.min_busbw_gbps
    verdict = allreduce(ctx, pool, nodes, minimum)
    report.fabric = {
        "kind": "nccl",
        "ok": verdict.ok,
        "detail": verdict.detail,
        "busbw_gbps": verdict.busbw_gbps,
        "min_busbw_gbps": minimum,
        "basis": "--min-busbw"
        if options.min_busbw_gbps is not None
        else (pool.threshold.basis if pool.threshold else "no EFA: no threshold"),
    }
    by_leaf = leaf_bandwidth(ctx, pool, nodes, minimum)
    if by_leaf is not None:
        report.fabric["leaves"] = by_leaf.as_dict()
        if not all(r["ok"] for r in [*by_leaf.within, *by_leaf.across]):
            report.fail(f"leaf switches: {by_leaf.diagnosis}")
    if verdict.ok:
        return
    report.fail(f"all-reduce across {len(nodes)} nodes: {verdict.detail}")
    if by_leaf is not None and by_leaf.spine_suspected:
        # Bisection would pair nodes across leaves and drain good nodes for the spine's fault.
        report.notes.append("no bisection: the slow part is between leaf switches, not a node")
        return
    if options.bisect:
        found = locate_slow(ctx, pool, nodes, minimum)
        drained = [drain(ctx, e) for e in found.to_drain()] if options.drain else []
        report.bisect = {
            "waves": found.waves,
            "runs": [{"pair": list(p), "ok": r.ok, "detail": r.detail} for p, r in found.runs],
            "slow": [e.node for e in found.slow],
            "slow_pairs": sorted({tuple(sorted((e.node, e.partner))) for e in found.slow_pairs}),
            "unresolved": found.unresolved,
            "good": found.good,
            "drained": drained,
        }
        if not found.slow and not found.slow_pairs:
            report.notes.append(
                "bisection found no single node or pair: nothing drained (every pair that ran "
                "failed: look at the pool's fabric or configuration)"
            )


def accept_pool(ctx: Context, pool: PoolAcceptance, options: Options) -> PoolReport:
    report = PoolReport(pool.pool)
    found = steps.settled_partition_nodes(ctx, pool.partition)
    report.nodes = found.free
    report.unavailable = [f"{n} ({s})" for n, s in found.busy_or_down]
    if not found.free:
        report.verdict = "skip"
        report.notes.append("no free node in the partition")
        return report
    node_checks(ctx, pool, found.free, report)
    fabric(ctx, pool, found.free, options, report)
    return report


def accept(ctx: Context, options: Options) -> list[PoolReport]:
    acceptance = load(ctx)
    chosen = [p for p in acceptance.pools if not options.pools or p.pool in options.pools]
    unknown = set(options.pools) - {p.pool for p in acceptance.pools}
    if unknown:
        known = [p.pool for p in acceptance.pools]
        raise AgentError(f"no pool {sorted(unknown)} in this cluster: one of {known}")
    return [accept_pool(ctx, pool, options) for pool in chosen]
