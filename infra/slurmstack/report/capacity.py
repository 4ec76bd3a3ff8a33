"""Capacity of a planned cluster: nodes, accelerators, memory, compute and fabric."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.plan import ClusterPlan, PoolPlan

GIB_PER_MIB = 1 / 1024


@dataclass(frozen=True)
class PoolCapacity:
    pool: str
    instance_type: str
    nodes: int
    accelerator_model: str | None
    accelerators: int
    accelerator_memory_gib: float
    bf16_dense_pflops: float
    efa: bool
    efa_gbps_per_node: float
    efa_gbps_total: float
    cpu_cores: int
    vcpus: int
    memory_gib: float
    scratch_gb_per_node: int


@dataclass(frozen=True)
class ClusterCapacity:
    pools: tuple[PoolCapacity, ...]

    @property
    def nodes(self) -> int:
        return sum(p.nodes for p in self.pools)

    @property
    def accelerators(self) -> int:
        return sum(p.accelerators for p in self.pools)

    @property
    def accelerators_by_model(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.pools:
            if p.accelerator_model and p.accelerators:
                out[p.accelerator_model] = out.get(p.accelerator_model, 0) + p.accelerators
        return out

    @property
    def accelerator_memory_gib(self) -> float:
        return sum(p.accelerator_memory_gib for p in self.pools)

    @property
    def bf16_dense_pflops(self) -> float:
        return sum(p.bf16_dense_pflops for p in self.pools)

    @property
    def efa_gbps_total(self) -> float:
        return sum(p.efa_gbps_total for p in self.pools)

    @property
    def cpu_cores(self) -> int:
        return sum(p.cpu_cores for p in self.pools)

    @property
    def memory_gib(self) -> float:
        return sum(p.memory_gib for p in self.pools)


def pool_capacity(pool: PoolPlan) -> PoolCapacity:
    facts = pool.facts
    acc = facts.accelerator
    per_node_acc = acc.count if acc else 0
    efa_gbps = facts.network_gbps if pool.efa else 0.0
    return PoolCapacity(
        pool=pool.name,
        instance_type=pool.instance_type,
        nodes=pool.count,
        accelerator_model=acc.model if acc else None,
        accelerators=per_node_acc * pool.count,
        accelerator_memory_gib=(acc.memory_gib * acc.count * pool.count) if acc else 0.0,
        bf16_dense_pflops=(acc.bf16_dense_tflops * acc.count * pool.count / 1000) if acc else 0.0,
        efa=pool.efa,
        efa_gbps_per_node=efa_gbps,
        efa_gbps_total=efa_gbps * pool.count,
        cpu_cores=facts.cores * pool.count,
        vcpus=facts.vcpus * pool.count,
        memory_gib=facts.memory_mib * GIB_PER_MIB * pool.count,
        scratch_gb_per_node=(facts.nvme.count * facts.nvme.size_gb)
        if (facts.nvme and pool.local_scratch)
        else 0,
    )


def cluster_capacity(plan: ClusterPlan) -> ClusterCapacity:
    return ClusterCapacity(tuple(pool_capacity(p) for p in plan.pools))
