"""How one ResumeProgram call's nodes are launched: in units, each one pool's, each sent as few
EC2 Fleet requests as EC2's limits allow. Pure: the nodes, the jobs of the resume file and the
pools in; the units and their requests out.

An exclusive job that needs more than one node gets a unit of its own, launched all or nothing:
a 64-node job that gets 40 instances cannot run, and 40 idle p5s until Slurm gives up on them is
what ParallelCluster's all-or-nothing scaling (the default since its 3.8) is there to prevent.
Exclusive means what the resume file says (resume_file.exclusive_of) or, where it says nothing
(Slurm 22.05), what the pool's partition says (OverSubscribe=EXCLUSIVE). A job whose nodes
another job of the same call also waits for, and every other node, launches best effort: what
EC2 has runs jobs now.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ...contract import ElasticPool
from .nodes import by_pool, pool_of
from .resume_file import ResumeJob

# At most this many instances in one EC2 Fleet request: an instant fleet's MinTargetCapacity is
# at most 1,000 (EC2 API Reference, OnDemandOptionsRequest), and EC2's resource bucket for
# launches holds 1,000 instances, refilled at two a second (EC2 Developer Guide, "Request
# throttling for the Amazon EC2 API", resource token limits).
FLEET_REQUEST_MAX = 1000


@dataclass(frozen=True)
class LaunchUnit:
    pool: str
    nodes: tuple[str, ...]
    job: int | None = None  # the job whose nodes launch all or nothing; None: best effort

    @property
    def all_or_nothing(self) -> bool:
        return self.job is not None


@dataclass(frozen=True)
class Request:
    """One EC2 Fleet request of a unit: its nodes, and how many instances it needs at least
    (EC2 launches none unless it can launch that many)."""

    unit: LaunchUnit
    nodes: tuple[str, ...]
    minimum: int


def launch_units(
    names: Iterable[str], jobs: Iterable[ResumeJob], pools: tuple[ElasticPool, ...]
) -> tuple[list[LaunchUnit], list[str]]:
    """(the units, the names of no elastic pool). Each node is in one unit."""
    grouped, strangers = by_pool(names, pools)
    wanted = {n for group in grouped.values() for n in group}
    jobs = list(jobs)
    waiting_for = Counter(n for job in jobs for n in set(job.nodes) if n in wanted)
    units: list[LaunchUnit] = []
    taken: set[str] = set()
    for job in jobs:
        mine = [n for n in dict.fromkeys(job.nodes) if n in wanted]
        if len(mine) < 2 or any(waiting_for[n] > 1 or n in taken for n in mine):
            continue
        exclusive = job.exclusive
        if exclusive is None:  # the file does not say: the partition does
            exclusive = all(getattr(pool_of(n, pools), "exclusive", False) for n in mine)
        if not exclusive:
            continue
        job_pools, _ = by_pool(mine, pools)
        units += [LaunchUnit(p, tuple(nodes), job.job_id) for p, nodes in job_pools.items()]
        taken.update(mine)
    for pool, group in grouped.items():
        rest = tuple(n for n in group if n not in taken)
        if rest:
            units.append(LaunchUnit(pool, rest))
    return units, strangers


def requests(unit: LaunchUnit, limit: int = FLEET_REQUEST_MAX) -> list[Request]:
    """The EC2 Fleet requests of ``unit``, each for at most ``limit`` instances: all of them
    for an all-or-nothing unit (a unit larger than one request is all or nothing across its
    requests: the launcher releases every instance of it when one falls short), at least one
    for a best-effort one."""
    out = []
    for start in range(0, len(unit.nodes), limit):
        nodes = unit.nodes[start : start + limit]
        out.append(Request(unit, nodes, len(nodes) if unit.all_or_nothing else 1))
    return out
