"""What the plan decides about the jobs every cluster ships (slurmstack.render.jobs) and the
acceptance run after a deploy (`slurmstack-accept`): per pool, what a node must show (GPUs, EFA
devices, mounts, the NCCL/libfabric environment a task sees), how its fabric is tested, and the
bus bandwidth nccl-tests' all_reduce_perf must reach.

Thresholds are data, in one place: the figures AWS publishes for all_reduce_perf between two
nodes (ALLREDUCE_BASELINES, each with its source), and one rule for the types without one
(``threshold_for``). They catch a node or link that is broken or badly degraded (a fallback to
TCP, a missing EFA device, a throttled GPU); they are not a tuning target. A cluster that has
measured itself passes ``slurmstack-accept --min-busbw``.
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.catalog import Catalog, InstanceFacts, load_catalog
from slurmstack.contract import (
    CHECKPOINTS_DIR_NAME,
    Acceptance,
    AllReduceThreshold,
    Collective,
    MountKind,
    PoolAcceptance,
)
from slurmstack.plan.cluster import ClusterPlan
from slurmstack.plan.pools import PoolPlan
from slurmstack.rules.fabric import EnvTarget, FabricProfile

# The message size the acceptance judges at (2 GiB, the largest size both published runs
# report): bus bandwidth at large messages is what a training job's gradient all-reduce sees.
ACCEPTANCE_MESSAGE_BYTES = 2 * 1024**3
# all_reduce_perf's sweep: 8 B to 2 GiB, doubling, one GPU per rank, results checked.
ALLREDUCE_ARGS = ("-b", "8", "-e", "2G", "-f", "2", "-g", "1", "-c", "1")

SOURCE_AWS_NCCL_TESTS = (
    "aws-samples/awsome-distributed-training, micro-benchmarks/nccl-tests/README.md, "
    "'Results' (all_reduce_perf on 2 nodes, out-of-place busbw; read at commit 0162aacd5da0)"
)


@dataclass(frozen=True)
class AllReduceBaseline:
    """A published all_reduce_perf result: bus bandwidth between ``nodes`` nodes of a type."""

    instance_type: str
    busbw_gbps: float
    message_bytes: int
    nodes: int
    source: str


# AWS's published two-node all_reduce_perf results, at 2 GiB.
ALLREDUCE_BASELINES: tuple[AllReduceBaseline, ...] = (
    AllReduceBaseline("p5.48xlarge", 443.72, ACCEPTANCE_MESSAGE_BYTES, 2, SOURCE_AWS_NCCL_TESTS),
    AllReduceBaseline("p4de.24xlarge", 78.33, ACCEPTANCE_MESSAGE_BYTES, 2, SOURCE_AWS_NCCL_TESTS),
)

# A pool passes at 80% of its published figure: room for run-to-run variation and for rings
# longer than the published two nodes, while a node on TCP, short of an EFA device or with a
# GPU throttled falls well below.
PUBLISHED_MARGIN = 0.8
# Types without a published figure must reach half their EFA line rate (the catalog's network
# bandwidth, Gbit/s, over 8): both published figures exceed 110% of their line rate (p5:
# 443.72 GB/s on 400, p4de: 78.33 on 50), while a fallback to TCP sockets or a missing EFA
# device falls far below half. A lower bound that catches a broken fabric, not a tuning target.
DERIVED_LINE_RATE_FRACTION = 0.5


def line_rate_gbps(facts: InstanceFacts) -> float:
    """The instance's network bandwidth in GB/s (the catalog states Gbit/s)."""
    return facts.network_gbps / 8


def _published(instance_type: str) -> AllReduceBaseline | None:
    return next((b for b in ALLREDUCE_BASELINES if b.instance_type == instance_type), None)


def _reference(
    facts: InstanceFacts, catalog: Catalog
) -> tuple[AllReduceBaseline, InstanceFacts] | None:
    """The published figure of a type with the same GPUs per node and GPUDirect RDMA, nearest
    in line rate (the figure scales with it), and that type's facts; None if there is none."""
    same = []
    for baseline in ALLREDUCE_BASELINES:
        ref = catalog.instance(baseline.instance_type)
        if (
            ref is not None
            and ref.gpus == facts.gpus
            and ref.gpudirect_rdma == facts.gpudirect_rdma
        ):
            same.append((baseline, ref))
    if not same:
        return None
    return min(
        same, key=lambda p: (abs(p[1].network_gbps - facts.network_gbps), p[0].instance_type)
    )


def _gb(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def threshold_for(instance_type: str, facts: InstanceFacts, catalog: Catalog) -> AllReduceThreshold:
    """The bus bandwidth (GB/s, at ACCEPTANCE_MESSAGE_BYTES) a pool of ``instance_type`` must
    reach, and how it is derived (``catalog`` holds the facts of the published types)."""
    published = _published(instance_type)
    if published is not None:
        value = round(published.busbw_gbps * PUBLISHED_MARGIN, 1)
        basis = (
            f"{PUBLISHED_MARGIN:.0%} of the {published.busbw_gbps} GB/s AWS publishes for "
            f"{published.nodes} x {instance_type} ({published.source})"
        )
        return AllReduceThreshold(value, published.message_bytes, basis)
    found = _reference(facts, catalog)
    if found is not None:
        reference, ref_facts = found
        scaled = reference.busbw_gbps * facts.network_gbps / ref_facts.network_gbps
        value = round(scaled * PUBLISHED_MARGIN, 1)
        basis = (
            f"derived: {PUBLISHED_MARGIN:.0%} of {reference.instance_type}'s published "
            f"{reference.busbw_gbps} GB/s (same {facts.gpus} GPUs per node with GPUDirect RDMA), "
            f"scaled by line rate {_gb(facts.network_gbps)}/{_gb(ref_facts.network_gbps)} Gbit/s "
            f"({reference.source})"
        )
        return AllReduceThreshold(value, reference.message_bytes, basis)
    rate = line_rate_gbps(facts)
    value = round(rate * DERIVED_LINE_RATE_FRACTION, 2)
    basis = (
        f"derived: {DERIVED_LINE_RATE_FRACTION:.0%} of the EFA line rate "
        f"({_gb(facts.network_gbps)} Gbit/s = {_gb(rate)} GB/s, catalog); no published figure "
        f"for {instance_type}"
    )
    return AllReduceThreshold(value, ACCEPTANCE_MESSAGE_BYTES, basis)


def collective(pool: PoolPlan) -> Collective:
    if pool.gpu is None:
        return Collective.MPI
    return Collective.NCCL if pool.gpu.kind == "gpu" else Collective.NONE


# The Open MPI of the EFA installer (built with libfabric), which the Deep Learning AMIs (NVIDIA
# and Neuron) carry and slurmstack's CPU images install (image_pins.json, efa_installer): every
# node compiles and runs MPI with it.
DLAMI_MPI_BIN = "/opt/amazon/openmpi/bin"


def pool_acceptance(pool: PoolPlan, catalog: Catalog) -> PoolAcceptance:
    chosen = collective(pool)
    threshold = None
    # Without EFA an all-reduce goes over TCP: it must complete and be correct, at any speed.
    if chosen is Collective.NCCL and pool.efa:
        threshold = threshold_for(pool.instance_type, pool.facts, catalog)
    env = tuple((v.name, v.value) for v in pool.env_for(EnvTarget.PROCESS) if not v.prepend)
    return PoolAcceptance(
        pool=pool.name,
        partition=pool.partition,
        instance_type=pool.instance_type,
        nodes=pool.count,
        gpus_per_node=pool.expected_gpus,
        efa_devices=pool.expected_efa_devices,
        mounts=tuple(m.path for m in pool.mounts),
        env=env,
        collective=chosen,
        threshold=threshold,
        allreduce_args=ALLREDUCE_ARGS if chosen is Collective.NCCL else (),
        mpi_bin=DLAMI_MPI_BIN,
    )


def acceptance(plan: ClusterPlan, catalog: Catalog | None = None) -> Acceptance:
    catalog = catalog or load_catalog()
    return Acceptance(
        cluster=plan.name, pools=tuple(pool_acceptance(p, catalog) for p in plan.pools)
    )


def lustre_checkpoints(plan: ClusterPlan) -> str | None:
    """The checkpoint directory on Lustre (world-writable and sticky, made by the head's
    `job-dirs` step), or None when the cluster has no Lustre."""
    for mount in plan.mounts:
        if mount.kind is MountKind.LUSTRE:
            return f"{mount.path}/{CHECKPOINTS_DIR_NAME}"
    return None


def checkpoint_root(plan: ClusterPlan) -> str | None:
    """Where the example jobs checkpoint, as a shell word (``$user``: the job's user, which
    the job script sets): the user's directory on Lustre when the cluster has it, else under
    the user's shared /home (EFS), else None (no shared file system: a job must be told one)."""
    lustre = lustre_checkpoints(plan)
    if lustre is not None:
        return f"{lustre}/$user"
    if plan.home is not None:
        return f"$HOME/{CHECKPOINTS_DIR_NAME}"
    return None


def fabric_note(pool: PoolPlan) -> str:
    """One line on how the pool's jobs talk between nodes, for the rendered jobs' comments."""
    return {
        FabricProfile.EFA_GPUDIRECT: "NCCL over EFA with GPUDirect RDMA (aws-ofi-nccl)",
        FabricProfile.EFA_GPU: "NCCL over EFA without GPUDirect RDMA (aws-ofi-nccl)",
        FabricProfile.EFA_NEURON: "the Neuron runtime over EFA",
        FabricProfile.EFA_CPU: "MPI over EFA (libfabric)",
        FabricProfile.NONE: "TCP (no EFA)",
    }[pool.fabric]
