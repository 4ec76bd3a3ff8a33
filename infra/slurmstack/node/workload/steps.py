"""The job steps acceptance runs, as `srun` command lines on the nodes it chose, and Slurm's
view of a partition's nodes. Every step is its own allocation (`srun` outside a job), whole
nodes (--exclusive), bounded: it gives up when the nodes are not free within IMMEDIATE_SECONDS
and ends after its time limit."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from ...contract import AGENT_PATH, JOBS_LIB_DIR, NCCL_TESTS_DIR, Command, PoolAcceptance
from ..context import Context
from ..slurm import parse_node_line

IMMEDIATE_SECONDS = 120
NODE_CHECK_MINUTES = 5
ALLREDUCE_MINUTES = 15
MPI_MINUTES = 5
JOB_NAME = "slurmstack-accept"
# Node states (sinfo %T) a node can be given to acceptance in: free now.
FREE_STATES = frozenset({"idle"})
# A node whose job just ended stays "completing" while slurmd runs the Epilog and reports back
# (seconds). A node the backfill scheduler set aside for a pending job shows "planned" until a
# later cycle clears the flag, even when that job has since run or gone: each cycle starts by
# clearing every planned node, and cycles come every bf_interval (30 s by default) once a job or
# node has changed and no job is completing (Slurm's backfill.c: _attempt_backfill,
# _more_work). Acceptance started right after a job (or after another acceptance run) waits this
# long for both to settle; a node still planned then is wanted by a pending job and is left out.
SETTLING_STATES = frozenset({"completing", "planned"})
SETTLE_SECONDS = 90
SETTLE_POLL_SECONDS = 2


@dataclass(frozen=True)
class Nodes:
    free: list[str]
    busy_or_down: list[tuple[str, str]]  # (node, state)


def partition_nodes(ctx: Context, partition: str) -> Nodes:
    """The partition's nodes by name, free ones apart (sinfo lists a node once per partition)."""
    out = ctx.sh("sinfo", "-h", "-N", "-p", partition, "-o", "%N %T", check=False)
    free: list[str] = []
    other: list[tuple[str, str]] = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) != 2 or parts[0] in free or parts[0] in dict(other):
            continue
        name, state = parts
        (free.append(name) if state in FREE_STATES else other.append((name, state)))
    return Nodes(sorted(free, key=_natural), sorted(other, key=lambda p: _natural(p[0])))


def settled_partition_nodes(ctx: Context, partition: str) -> Nodes:
    """``partition_nodes`` once no node is completing or planned, or after SETTLE_SECONDS."""
    deadline = ctx.clock() + SETTLE_SECONDS
    for _ in range(SETTLE_SECONDS // SETTLE_POLL_SECONDS + 1):
        found = partition_nodes(ctx, partition)
        settling = any(state in SETTLING_STATES for _, state in found.busy_or_down)
        if not settling or ctx.clock() >= deadline:
            break
        ctx.sleep(SETTLE_POLL_SECONDS)
    return found


def _natural(name: str) -> tuple[str, int]:
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return head, int(tail) if tail else -1


def srun(
    pool: PoolAcceptance,
    nodes: list[str],
    minutes: int,
    tasks_per_node: int = 1,
    gpus: bool = False,
    mpi: bool = False,
) -> list[str]:
    argv = [
        "srun",
        f"--partition={pool.partition}",
        f"--nodelist={','.join(nodes)}",
        f"--nodes={len(nodes)}",
        f"--ntasks-per-node={tasks_per_node}",
        "--exclusive",
        f"--immediate={IMMEDIATE_SECONDS}",
        f"--time={minutes}",
        f"--job-name={JOB_NAME}",
    ]
    if gpus and pool.gpus_per_node:
        argv.append(f"--gpus-per-node={pool.gpus_per_node}")
    if mpi:
        argv.append("--mpi=pmix")
    return argv


def node_check_argv(pool: PoolAcceptance, nodes: list[str]) -> list[str]:
    command = [AGENT_PATH, Command.NODE_CHECK.value, "--pool", pool.pool, "--json"]
    return [*srun(pool, nodes, NODE_CHECK_MINUTES, gpus=True), *command]


def allreduce_argv(pool: PoolAcceptance, nodes: list[str]) -> list[str]:
    """nccl-tests: one rank per GPU, wired up by PMIx."""
    test = [f"{NCCL_TESTS_DIR}/all_reduce_perf", *pool.allreduce_args]
    per_node = max(pool.gpus_per_node, 1)
    return [*srun(pool, nodes, ALLREDUCE_MINUTES, per_node, gpus=True, mpi=True), *test]


def mpi_argv(pool: PoolAcceptance, nodes: list[str]) -> list[str]:
    """The MPI example's all-reduce: one rank per node, wired up by PMIx."""
    program = ["/bin/sh", f"{JOBS_LIB_DIR}/mpi-allreduce.sh", pool.mpi_bin]
    return [*srun(pool, nodes, MPI_MINUTES, mpi=True), *program]


def node_topologies(ctx: Context, nodes: list[str]) -> dict[str, str]:
    """Node -> its Topology= as slurmctld keeps it (Slurm 25.05 and later print it for a node
    placed in a topology; nodes without one are absent)."""
    out = ctx.sh("scontrol", "--oneliner", "show", "node", ",".join(nodes), check=False)
    found = (parse_node_line(line) for line in out.stdout.splitlines())
    return {f["NodeName"]: f["Topology"] for f in found if "NodeName" in f and "Topology" in f}


def output(result: subprocess.CompletedProcess[str]) -> str:
    """What a step printed: srun's own errors (stderr) after the program's output."""
    return (result.stdout or "") + (result.stderr or "")
