"""acceptance.json: what acceptance expects of each pool's nodes, and how it tests them."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Acceptance", "AllReduceThreshold", "Collective", "PoolAcceptance"]


class Collective(enum.StrEnum):
    """How acceptance tests a pool's fabric."""

    NCCL = "nccl"  # nccl-tests all_reduce_perf, judged against a bus-bandwidth threshold
    MPI = "mpi"  # an MPI all-reduce across the nodes, judged by its result
    NONE = "none"  # nothing slurmstack can run (Neuron: nccom-test is the Neuron SDK's)


@dataclass(frozen=True)
class AllReduceThreshold:
    """The least bus bandwidth (GB/s) all_reduce_perf must reach at ``message_bytes``, and how
    the figure was arrived at (its published source, or the derivation)."""

    min_busbw_gbps: float
    message_bytes: int
    basis: str


@dataclass(frozen=True)
class PoolAcceptance:
    """What acceptance expects of a node of one pool, and how it tests the pool."""

    pool: str
    partition: str
    instance_type: str
    nodes: int
    gpus_per_node: int
    efa_devices: int
    mounts: tuple[str, ...]  # shared file systems and local scratch, each a mount point
    env: tuple[tuple[str, str], ...]  # NCCL/libfabric variables a task sees (name, value)
    collective: Collective
    threshold: AllReduceThreshold | None = None
    allreduce_args: tuple[str, ...] = ()  # all_reduce_perf's arguments (NCCL pools)
    mpi_bin: str = ""  # where the pool's MPI compiler is, when not on the default PATH


@dataclass(frozen=True)
class Acceptance:
    cluster: str
    pools: tuple[PoolAcceptance, ...]

    def pool(self, name: str) -> PoolAcceptance:
        for pool in self.pools:
            if pool.pool == name:
                return pool
        raise KeyError(name)
