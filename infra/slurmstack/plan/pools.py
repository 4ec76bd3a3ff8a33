"""What the plan decides about a pool: Slurm's view of its nodes (CPUs, memory, GRES,
feature), its EFA layout and placement, its image, mounts and NCCL environment."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.catalog import Catalog, InstanceFacts
from slurmstack.contract import MountKind, container_root, elastic_node_names, node_name_pattern
from slurmstack.plan.errors import PlanError
from slurmstack.plan.storage import MountPlan
from slurmstack.rules.efa import (
    NetworkInterfacePlan,
    addresses_per_node,
    efa_device_count,
    efa_interfaces,
    resolve_efa,
)
from slurmstack.rules.fabric import (
    EnvTarget,
    EnvVar,
    FabricProfile,
    fabric_env,
    fabric_profile,
    with_overrides,
)
from slurmstack.rules.facts import resolve_facts
from slurmstack.rules.fsx import lustre_client_efa_interfaces
from slurmstack.spec import CapacitySpec, CapacityType, PoolSpec, RootVolume

# Memory kept back from Slurm for the OS, the NVIDIA/EFA drivers, page cache for
# Lustre and the daemons. The OS sees less than the nominal EC2 figure, and slurmd drains
# a node whose RealMemory exceeds what it finds, so the headroom is at least 2 GiB and 5%.
MEMORY_HEADROOM_FRACTION = 0.05
MEMORY_HEADROOM_MIN_MIB = 2048


@dataclass(frozen=True)
class GpuPlan:
    gres_type: str  # lowercase model, e.g. h100
    count: int
    device_files: str  # e.g. /dev/nvidia[0-7] or /dev/neuron[0-15]
    kind: str  # gpu or neuron

    @property
    def gres_name(self) -> str:
        """Slurm GRES name: ``gpu`` for NVIDIA GPUs, ``neuron`` for Trainium/Inferentia
        devices (a generic GRES: no CUDA_VISIBLE_DEVICES, but the same device binding)."""
        return self.kind

    @property
    def gres(self) -> str:
        return f"{self.gres_name}:{self.gres_type}:{self.count}"


@dataclass(frozen=True)
class PoolPlan:
    name: str
    instance_type: str
    facts: InstanceFacts
    count: int
    capacity: CapacitySpec
    efa: bool
    placement_group: bool  # launches into a cluster placement group (new or named)
    interfaces: tuple[NetworkInterfacePlan, ...]
    gpu: GpuPlan | None
    real_memory_mib: int
    cpus: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    exclusive: bool
    local_scratch: str | None
    ami: str | None  # the definition's own AMI for this node (slurmstack.plan.images decides)
    root_volume: RootVolume
    family: str  # instance family, e.g. p5, g6e, hpc7a
    fabric: FabricProfile
    env: tuple[EnvVar, ...]  # NCCL/libfabric environment, the definition's overrides last
    mounts: tuple[MountPlan, ...]  # every mount of a node of this pool (shared, then local)
    container_root: str  # enroot's data/cache live here (local NVMe when the pool has it)
    # Lustre over EFA: the file system is EFA-enabled, the pool has EFA on and its instance
    # type can be an EFA Lustre client (slurmstack.rules.fsx.is_efa_lustre_client). Otherwise the
    # pool mounts the same file system over TCP.
    lustre_over_efa: bool = False
    lustre_efa_interfaces: int = 0  # EFA interfaces the node adds to LNet (0: TCP only)
    # An existing placement group the definition names (the stack creates none); None: the
    # stack creates the pool's own group when placement_group is set.
    placement_group_name: str | None = None
    # Elastic nodes: max_count - count CLOUD nodes Slurm's power saving starts for pending
    # jobs and stops after scale_down_idle_minutes idle (slurmstack.plan.power).
    elastic_nodes: int = 0
    scale_down_idle_minutes: int = 10

    @property
    def max_count(self) -> int:
        """The most nodes the pool may have: its always-on count plus its elastic nodes."""
        return self.count + self.elastic_nodes

    @property
    def elastic(self) -> bool:
        return self.elastic_nodes > 0

    @property
    def elastic_node_names(self) -> str:
        """The pool's CLOUD nodes as a Slurm hostlist, e.g. gpu-e[1-8]."""
        return elastic_node_names(self.name, self.elastic_nodes)

    @property
    def elastic_partition(self) -> str:
        """The hidden, inactive partition that gives the elastic nodes (and only them) their
        SuspendTime (slurmstack.plan.power)."""
        return f"{self.name}_elastic"

    @property
    def suspend_time_seconds(self) -> int:
        return self.scale_down_idle_minutes * 60

    @property
    def cloud_node_conf(self) -> str:
        """The slurm.conf attributes of the pool's CLOUD nodes: what a dynamic node of the
        pool registers with (dynamic_node_conf), declared in advance."""
        return f"{self.dynamic_node_conf} State=CLOUD"

    @property
    def partition(self) -> str:
        return self.name

    @property
    def nodeset(self) -> str:
        return f"{self.name}_nodes"

    @property
    def node_name_pattern(self) -> str:
        """Every Slurm node name this pool can produce, as a Slurm hostlist.

        Nodes register themselves (``slurmd -Z``), so names are not known in advance. A node
        is named ``<pool>-<n>`` with n the low 16 bits of its private IPv4 address: unique
        within the compute subnet (an AWS subnet is at most a /16), stable for the instance's
        life, and within one hostlist range per pool, which is how gres.conf gives a pool's
        nodes their device files and no other node any.
        """
        return node_name_pattern(self.name)

    @property
    def dynamic_node_conf(self) -> str:
        """The ``slurmd --conf`` value a node of this pool registers with."""
        parts = [f"Feature={self.feature}"]
        if self.gpu is not None:
            parts.append(f"Gres={self.gpu.gres}")
        parts += [
            f"RealMemory={self.real_memory_mib}",
            f"CPUs={self.cpus}",
            f"Sockets={self.sockets}",
            f"CoresPerSocket={self.cores_per_socket}",
            f"ThreadsPerCore={self.threads_per_core}",
        ]
        return " ".join(parts)

    @property
    def def_mem_per_cpu_mib(self) -> int:
        """Memory a job gets per allocated CPU unless it asks (DefMemPerCPU). Without it a
        CR_Core_Memory job is given the whole node's memory and blocks every other job."""
        return max(self.real_memory_mib // self.cpus, 1)

    @property
    def expected_gpus(self) -> int:
        return self.gpu.count if self.gpu is not None and self.gpu.kind == "gpu" else 0

    @property
    def expected_neuron_devices(self) -> int:
        return self.gpu.count if self.gpu is not None and self.gpu.kind == "neuron" else 0

    @property
    def expected_efa_devices(self) -> int:
        """EFA devices under /sys/class/infiniband: one per EFA or efa-only interface."""
        return efa_device_count(self.interfaces)

    @property
    def local_scratch_mount(self) -> MountPlan | None:
        for mount in self.mounts:
            if mount.kind is MountKind.NVME_RAID0:
                return mount
        return None

    def env_for(self, target: EnvTarget) -> tuple[EnvVar, ...]:
        return tuple(v for v in self.env if v.target is target)

    @property
    def feature(self) -> str:
        return self.name

    @property
    def addresses_per_node(self) -> int:
        return addresses_per_node(self.interfaces)

    @property
    def gpus(self) -> int:
        """Accelerators of the pool at its largest (max_count nodes)."""
        return self.gpu.count * self.max_count if self.gpu else 0

    @property
    def gpudirect_rdma(self) -> bool:
        return self.efa and self.facts.gpudirect_rdma


def schedulable_memory_mib(facts: InstanceFacts) -> int:
    headroom = max(int(facts.memory_mib * MEMORY_HEADROOM_FRACTION), MEMORY_HEADROOM_MIN_MIB)
    return max(facts.memory_mib - headroom, 256)


def gpu_plan(facts: InstanceFacts) -> GpuPlan | None:
    acc = facts.accelerator
    if acc is None:
        return None
    prefix = "/dev/nvidia" if acc.kind == "gpu" else "/dev/neuron"
    files = f"{prefix}0" if acc.count == 1 else f"{prefix}[0-{acc.count - 1}]"
    return GpuPlan(gres_type=acc.gres_type, count=acc.count, device_files=files, kind=acc.kind)


# Capacity that is reserved where it was made: a new placement group cannot hold it.
RESERVED_CAPACITY = frozenset({CapacityType.CAPACITY_BLOCK, CapacityType.CAPACITY_RESERVATION})


def resolve_placement_group(pool: PoolSpec, efa: bool) -> bool:
    """Whether the pool launches into a cluster placement group (a new one, or the one the
    definition names)."""
    setting = pool.placement_group
    if setting == "auto":
        # EFA traffic wants the lowest-latency placement, except on reserved capacity:
        # Capacity Block instances are already placed together by AWS and refuse a placement
        # group, and an On-Demand Capacity Reservation cannot be moved into a placement group
        # made after it (EC2 User Guide, "Capacity Reservations in cluster placement groups"),
        # so launches into a new group would find no reserved capacity. A reservation made in
        # a placement group is used by naming that group.
        return efa and pool.capacity.type not in RESERVED_CAPACITY
    if isinstance(setting, bool):
        return setting
    return True


def existing_placement_group(pool: PoolSpec) -> str | None:
    """The name of the existing placement group the definition names, if any."""
    setting = pool.placement_group
    return setting if isinstance(setting, str) and setting != "auto" else None


def plan_pool(
    pool: PoolSpec,
    catalog: Catalog,
    shared_mounts: tuple[MountPlan, ...],
    nccl_overrides: dict[str, str | int | float | bool],
    lustre_efa: bool = False,
) -> PoolPlan:
    facts = resolve_facts(pool.instance_type, pool.instance_facts, catalog)
    if facts is None:
        raise PlanError(f"no facts for instance type {pool.instance_type!r}")
    efa = resolve_efa(pool, facts)
    sockets = facts.sockets
    family = pool.instance_type.split(".", 1)[0]
    mounts = shared_mounts
    if pool.local_scratch is not None and facts.nvme is not None:
        mounts += (MountPlan(pool.local_scratch, MountKind.NVME_RAID0, shared=False),)
    scratch = pool.local_scratch if facts.nvme is not None else None
    env = fabric_env(family, facts, efa)
    if env or facts.accelerator is not None:
        # Overrides apply where NCCL/libfabric run: accelerator and EFA pools.
        try:
            env = with_overrides(env, nccl_overrides)
        except ValueError as exc:
            raise PlanError(str(exc)) from exc
    interfaces = efa_interfaces(facts, efa)
    lustre_efa_interfaces = (
        lustre_client_efa_interfaces(pool.instance_type, facts, efa) if lustre_efa else 0
    )
    return PoolPlan(
        name=pool.name,
        instance_type=pool.instance_type,
        facts=facts,
        count=pool.count,
        capacity=pool.capacity,
        efa=efa,
        placement_group=resolve_placement_group(pool, efa),
        interfaces=interfaces,
        gpu=gpu_plan(facts),
        real_memory_mib=schedulable_memory_mib(facts),
        cpus=facts.vcpus,
        sockets=sockets,
        cores_per_socket=max(facts.cores // sockets, 1),
        threads_per_core=facts.threads_per_core,
        # Multi-node training jobs on the fabric want whole nodes: a second job on the
        # same node would share its accelerators' NVLink and EFA bandwidth. Pools whose EFA
        # has no RDMA (g5, g6, g6e) serve inference and development: they stay shareable.
        exclusive=fabric_profile(facts, efa)
        in (FabricProfile.EFA_GPUDIRECT, FabricProfile.EFA_NEURON),
        local_scratch=pool.local_scratch,
        ami=pool.ami,
        root_volume=pool.root_volume,
        family=family,
        fabric=fabric_profile(facts, efa),
        env=env,
        mounts=mounts,
        # Container images are large and node-local: enroot unpacks them on the NVMe RAID
        # when there is one, else on the root volume.
        container_root=container_root(scratch),
        lustre_over_efa=lustre_efa_interfaces > 0,
        lustre_efa_interfaces=lustre_efa_interfaces,
        placement_group_name=existing_placement_group(pool),
        elastic_nodes=pool.elastic_nodes,
        scale_down_idle_minutes=pool.scale_down_idle_minutes,
    )
