"""acceptance.json: what acceptance expects of each pool's nodes, and how it tests them."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, fields
from typing import Any

from .node_config import GENERATED_BY

__all__ = [
    "Acceptance",
    "AllReduceThreshold",
    "Collective",
    "PoolAcceptance",
    "acceptance_json",
    "read_acceptance",
]


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


def acceptance_json(acceptance: Acceptance) -> str:
    """acceptance.json as render writes it (sorted keys, two-space indent)."""
    pools = []
    for pool in acceptance.pools:
        data: dict[str, Any] = {f.name: getattr(pool, f.name) for f in fields(pool)}
        data["mounts"] = list(pool.mounts)
        data["env"] = [list(pair) for pair in pool.env]
        data["allreduce_args"] = list(pool.allreduce_args)
        data["collective"] = pool.collective.value
        data["threshold"] = None if pool.threshold is None else vars(pool.threshold).copy()
        pools.append(data)
    document = {"generated_by": GENERATED_BY, "cluster": acceptance.cluster, "pools": pools}
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def read_acceptance(text: str) -> Acceptance:
    """The Acceptance of an acceptance.json (ValueError or KeyError for a malformed one)."""
    data = json.loads(text)
    pools = []
    for pool in data["pools"]:
        threshold = pool.get("threshold")
        pools.append(
            PoolAcceptance(
                pool=str(pool["pool"]),
                partition=str(pool["partition"]),
                instance_type=str(pool["instance_type"]),
                nodes=int(pool["nodes"]),
                gpus_per_node=int(pool["gpus_per_node"]),
                efa_devices=int(pool["efa_devices"]),
                mounts=tuple(str(m) for m in pool["mounts"]),
                env=tuple((str(k), str(v)) for k, v in pool["env"]),
                collective=Collective(pool["collective"]),
                threshold=AllReduceThreshold(**threshold) if threshold else None,
                allreduce_args=tuple(str(a) for a in pool.get("allreduce_args") or ()),
                mpi_bin=str(pool.get("mpi_bin") or ""),
            )
        )
    return Acceptance(cluster=str(data["cluster"]), pools=tuple(pools))
