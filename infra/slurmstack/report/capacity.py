"""Capacity of a planned cluster: nodes, accelerators, memory, compute and fabric, with every
pool at its largest (max_count), and the always-on part (count) that runs when idle."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.plan import ClusterPlan, PoolPlan

GIB_PER_MIB = 1 / 1024


@dataclass(frozen=True)
class PoolCapacity:
    """A pool at its largest (max_count nodes; the figures below are for that many), and its
    always-on part (count nodes), which is what runs when no job does."""

    pool: str
    instance_type: str
    nodes: int
    always_on_nodes: int
    always_on_accelerators: int
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
    def always_on_nodes(self) -> int:
        return sum(p.always_on_nodes for p in self.pools)

    @property
    def always_on_accelerators(self) -> int:
        return sum(p.always_on_accelerators for p in self.pools)

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
    nodes = pool.max_count
    return PoolCapacity(
        pool=pool.name,
        instance_type=pool.instance_type,
        nodes=nodes,
        always_on_nodes=pool.count,
        always_on_accelerators=per_node_acc * pool.count,
        accelerator_model=acc.model if acc else None,
        accelerators=per_node_acc * nodes,
        accelerator_memory_gib=(acc.memory_gib * acc.count * nodes) if acc else 0.0,
        bf16_dense_pflops=(acc.bf16_dense_tflops * acc.count * nodes / 1000) if acc else 0.0,
        efa=pool.efa,
        efa_gbps_per_node=efa_gbps,
        efa_gbps_total=efa_gbps * nodes,
        cpu_cores=facts.cores * nodes,
        vcpus=facts.vcpus * nodes,
        memory_gib=facts.memory_mib * GIB_PER_MIB * nodes,
        scratch_gb_per_node=(facts.nvme.count * facts.nvme.size_gb)
        if (facts.nvme and pool.local_scratch)
        else 0,
    )


def cluster_capacity(plan: ClusterPlan) -> ClusterCapacity:
    return ClusterCapacity(tuple(pool_capacity(p) for p in plan.pools))
