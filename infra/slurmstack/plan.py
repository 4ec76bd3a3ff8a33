"""The plan: a pure, frozen derivation from a valid definition and the catalog.

Everything the templates and the Pulumi stack need that is not written literally in the
definition is decided here, once: Slurm node sets, partitions and GRES; schedulable memory;
the EFA interface layout; whether a pool gets a placement group; mounts per storage tier.
``build_plan`` expects a definition that passed the checks (it raises ``PlanError`` when a
fact it needs is missing, which the checks report first).
"""

from __future__ import annotations

import enum
import ipaddress
import math
from dataclasses import dataclass

from slurmstack.catalog import Catalog, InstanceFacts, load_catalog
from slurmstack.fabric import (
    EnvTarget,
    EnvVar,
    FabricProfile,
    fabric_env,
    fabric_profile,
    with_overrides,
)
from slurmstack.facts import resolve_facts
from slurmstack.fsx import (
    LUSTRE_EFA_CONNECTION_LIMIT,
    is_efa_lustre_client,
    lustre_efa_enabled,
    lustre_efa_interface_count,
    resolved_throughput,
)
from slurmstack.spec import (
    CapacitySpec,
    CapacityType,
    ClusterSpec,
    LustreSpec,
    PoolSpec,
    RootVolume,
)

# Memory kept back from Slurm for the OS, the NVIDIA/EFA drivers, page cache for
# Lustre and the daemons. The OS sees less than the nominal EC2 figure, and slurmd drains
# a node whose RealMemory exceeds what it finds, so the headroom is at least 2 GiB and 5%.
MEMORY_HEADROOM_FRACTION = 0.05
MEMORY_HEADROOM_MIN_MIB = 2048

# Dynamic node names are <pool>-<n>, n = the low 16 bits of the node's private IPv4 address.
NODE_INDEX_MAX = 0xFFFF

# Slurm's ports; the stack's security groups open exactly these (slurmstack.stack.common
# holds the same numbers, and a test keeps the two equal).
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
SRUN_PORT_RANGE = (60001, 63000)

# MaxNodeCount headroom. A replacement instance usually gets a new private address, so it
# registers as a new dynamic node while the record of the instance it replaces lives on:
# slurmctld marks it DOWN ("Not responding") after SlurmdTimeout, and the head node's reaper
# (`slurmstack-node reap`, run by slurmstack-reaper.timer every REAPER_INTERVAL_MINUTES)
# deletes it once it has been DOWN for REAPER_GRACE_SECONDS, unless a job, a reservation, an
# operator's reason or a live instance at its address holds it. Until then, and during an
# instance refresh of a whole pool, every node can exist twice. The count is rounded up to a
# multiple of MAX_NODE_COUNT_STEP because MaxNodeCount only takes effect when slurmctld
# restarts: small resizes keep it.
MAX_NODE_COUNT_FACTOR = 2
MAX_NODE_COUNT_STEP = 64
# The reaper: how long a dead node's record stays DOWN before it is deleted (long enough for
# a reboot, which keeps the address and so the name), and how often it looks.
REAPER_GRACE_SECONDS = 900
REAPER_INTERVAL_MINUTES = 5

# Where the head node mounts its Slurm state volume, and the state directory on it (a
# subdirectory, so the file system's root and lost+found stay apart from Slurm's files).
STATE_VOLUME_MOUNT = "/var/spool/slurmctld"
STATE_SAVE_LOCATION = f"{STATE_VOLUME_MOUNT}/state"

# Public SSM parameters that resolve to the current images (see DESIGN.md "Images").
DLAMI_GPU_SSM_PARAMETER = (
    "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-24.04/latest/ami-id"
)
DLAMI_NEURON_SSM_PARAMETER = (
    "/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id"
)
UBUNTU_SSM_PARAMETER = {
    "x86_64": "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id",
    "arm64": "/aws/service/canonical/ubuntu/server/24.04/stable/current/arm64/hvm/ebs-gp3/ami-id",
}


class DeployParameter(enum.StrEnum):
    """Values known only at deploy time. The stack writes each to an SSM parameter under
    the cluster's prefix; nodes read them at boot (waiting until they exist), so user data
    carries only stable identifiers and no node waits on a slow resource just for its address."""

    HEAD_ADDRESS = "head/address"
    BUCKET = "bucket/name"
    LUSTRE_DNS = "lustre/dns-name"
    LUSTRE_MOUNT_NAME = "lustre/mount-name"
    EFS_ID = "efs/id"
    CONFIG_MANIFEST = "config/manifest"
    # The head node's Slurm state volume id (vol-...). On Nitro the volume shows up as an NVMe
    # disk whose serial is the id without its dash, which is how the head bootstrap finds it
    # (it falls back to the EBS device name /dev/sdf that the NVMe controller reports).
    STATE_VOLUME_ID = "head/state-volume-id"
    # The RDS accounting database's address (slurm.accounting.database.type rds).
    ACCOUNTING_DB_HOST = "accounting/db-host"


class PlanError(ValueError):
    """A definition reached the planner without a fact it needs (the checks should catch it)."""


class InterfaceType(enum.StrEnum):
    INTERFACE = "interface"  # a plain ENA interface
    EFA = "efa"  # EFA with an ENA device: carries IP traffic and the fabric
    EFA_ONLY = "efa-only"  # fabric only, takes no IP address of its own


@dataclass(frozen=True)
class NetworkInterfacePlan:
    network_card_index: int
    device_index: int
    interface_type: InterfaceType

    @property
    def uses_ip_address(self) -> bool:
        return self.interface_type is not InterfaceType.EFA_ONLY


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


class MountKind(enum.StrEnum):
    NVME_RAID0 = "nvme-raid0"
    LUSTRE = "lustre"
    EFS = "efs"


@dataclass(frozen=True)
class MountPlan:
    path: str
    kind: MountKind
    shared: bool


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
    ami: str | None
    ami_ssm_parameter: str
    root_volume: RootVolume
    family: str  # instance family, e.g. p5, g6e, hpc7a
    fabric: FabricProfile
    env: tuple[EnvVar, ...]  # NCCL/libfabric environment, the definition's overrides last
    mounts: tuple[MountPlan, ...]  # every mount of a node of this pool (shared, then local)
    container_root: str  # enroot's data/cache live here (local NVMe when the pool has it)
    # Lustre over EFA: the file system is EFA-enabled, the pool has EFA on and its instance
    # type can be an EFA Lustre client (slurmstack.fsx.is_efa_lustre_client). Otherwise the
    # pool mounts the same file system over TCP.
    lustre_over_efa: bool = False
    lustre_efa_interfaces: int = 0  # EFA interfaces the node adds to LNet (0: TCP only)
    # An existing placement group the definition names (the stack creates none); None: the
    # stack creates the pool's own group when placement_group is set.
    placement_group_name: str | None = None

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
        return f"{self.name}-[0-{NODE_INDEX_MAX}]"

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
        return sum(1 for i in self.interfaces if i.interface_type is not InterfaceType.INTERFACE)

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
        return sum(1 for i in self.interfaces if i.uses_ip_address)

    @property
    def gpus(self) -> int:
        return self.gpu.count * self.count if self.gpu else 0

    @property
    def gpudirect_rdma(self) -> bool:
        return self.efa and self.facts.gpudirect_rdma


@dataclass(frozen=True)
class HeadPlan:
    instance_type: str
    facts: InstanceFacts
    ami: str | None
    ami_ssm_parameter: str
    root_volume: RootVolume
    state_volume_gib: int


@dataclass(frozen=True)
class LustrePlan:
    spec: LustreSpec
    efa: bool
    per_unit_storage_throughput: int | None


@dataclass(frozen=True)
class ClusterPlan:
    name: str
    region: str
    availability_zone: str
    spec: ClusterSpec
    head: HeadPlan
    pools: tuple[PoolPlan, ...]
    default_partition: str
    lustre: LustrePlan | None
    mounts: tuple[MountPlan, ...]  # shared mounts, on every node
    vpc_cidr: ipaddress.IPv4Network | None
    public_subnet_cidr: ipaddress.IPv4Network | None
    compute_subnet_cidr: ipaddress.IPv4Network | None

    @property
    def max_node_count(self) -> int:
        return sum(p.count for p in self.pools)

    @property
    def head_in_public_subnet(self) -> bool:
        """SSH from ssh_cidrs needs a reachable address: the head node then sits in the public
        subnet (the new VPC's, or network.public_subnet_id) with a public IP; otherwise it is
        private, reached through Session Manager. (The stack decides the same way, from the
        public subnet it has: stack.head_node.head_in_public_subnet.)"""
        net = self.spec.network
        return bool(net.ssh_cidrs) and (net.vpc_id is None or net.public_subnet_id is not None)

    @property
    def lustre_efa_connections(self) -> int:
        """EFA connections to the file system with every pool at full size: each EFA interface
        a client configures counts as one, against a limit of LUSTRE_EFA_CONNECTION_LIMIT."""
        return sum(p.count * p.lustre_efa_interfaces for p in self.pools)

    @property
    def lustre_efa_connections_exceed_limit(self) -> bool:
        return self.lustre_efa_connections > LUSTRE_EFA_CONNECTION_LIMIT

    @property
    def gpus(self) -> int:
        return sum(p.gpus for p in self.pools)

    @property
    def slurm_max_node_count(self) -> int:
        """MaxNodeCount: every pool at full size, twice (see MAX_NODE_COUNT_FACTOR), rounded
        up to a multiple of MAX_NODE_COUNT_STEP."""
        wanted = max(self.max_node_count * MAX_NODE_COUNT_FACTOR, 1)
        return math.ceil(wanted / MAX_NODE_COUNT_STEP) * MAX_NODE_COUNT_STEP

    @property
    def gres_types(self) -> tuple[str, ...]:
        """GresTypes: gpu always (so a pool of GPUs can be added by reconfiguring), plus the
        other accelerator kinds the pools have."""
        kinds = {p.gpu.gres_name for p in self.pools if p.gpu is not None} | {"gpu"}
        return tuple(sorted(kinds))

    @property
    def slurm_settings(self) -> tuple[tuple[str, str], ...]:
        """The definition's extra slurm.conf keys, in the order written (appended last)."""
        out: list[tuple[str, str]] = []
        for key, value in self.spec.slurm.settings.items():
            if isinstance(value, bool):
                out.append((key, "YES" if value else "NO"))
            else:
                out.append((key, str(value)))
        return tuple(out)

    @property
    def parameter_prefix(self) -> str:
        """SSM parameter path holding deploy-time values nodes read at boot."""
        return f"/slurmstack/{self.name}"

    @property
    def munge_secret_name(self) -> str:
        return f"slurmstack/{self.name}/munge-key"

    def parameter(self, key: DeployParameter) -> str:
        """Full SSM parameter name of a deploy-time value, e.g.
        /slurmstack/llm-train/head/address."""
        return f"{self.parameter_prefix}/{key.value}"

    def pool(self, name: str) -> PoolPlan:
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(name)


def efa_interfaces(facts: InstanceFacts, efa: bool) -> tuple[NetworkInterfacePlan, ...]:
    """The interface list of a launch template.

    Card 0 / device 0 carries the node's IP address, so it is a full ``efa`` interface
    (ENA + EFA). Every other card gets one ``efa-only`` interface at device index 1:
    efa-only interfaces take no IP address, which keeps a p5 (32 cards) from consuming
    32 addresses of the subnet, and device index 1 is what AWS documents for the extra
    cards of multi-card instances.
    """
    if not efa:
        return (NetworkInterfacePlan(0, 0, InterfaceType.INTERFACE),)
    cards = min(facts.network_cards, max(facts.max_efa_interfaces, 1))
    layout = [NetworkInterfacePlan(0, 0, InterfaceType.EFA)]
    layout += [NetworkInterfacePlan(card, 1, InterfaceType.EFA_ONLY) for card in range(1, cards)]
    return tuple(layout)


def schedulable_memory_mib(facts: InstanceFacts) -> int:
    headroom = max(int(facts.memory_mib * MEMORY_HEADROOM_FRACTION), MEMORY_HEADROOM_MIN_MIB)
    return max(facts.memory_mib - headroom, 256)


def _gpu_plan(facts: InstanceFacts) -> GpuPlan | None:
    acc = facts.accelerator
    if acc is None:
        return None
    prefix = "/dev/nvidia" if acc.kind == "gpu" else "/dev/neuron"
    files = f"{prefix}0" if acc.count == 1 else f"{prefix}[0-{acc.count - 1}]"
    return GpuPlan(gres_type=acc.gres_type, count=acc.count, device_files=files, kind=acc.kind)


def _default_image(facts: InstanceFacts) -> str:
    if facts.accelerator is not None and facts.accelerator.kind == "neuron":
        return DLAMI_NEURON_SSM_PARAMETER
    if facts.accelerator is not None:
        return DLAMI_GPU_SSM_PARAMETER
    return UBUNTU_SSM_PARAMETER[facts.architecture.value]


def resolve_efa(pool: PoolSpec, facts: InstanceFacts) -> bool:
    return facts.efa_supported if pool.efa == "auto" else bool(pool.efa)


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


def _pool_plan(
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
    over_efa = lustre_efa and efa and is_efa_lustre_client(pool.instance_type)
    efa_devices = sum(1 for i in interfaces if i.interface_type is not InterfaceType.INTERFACE)
    return PoolPlan(
        name=pool.name,
        instance_type=pool.instance_type,
        facts=facts,
        count=pool.count,
        capacity=pool.capacity,
        efa=efa,
        placement_group=resolve_placement_group(pool, efa),
        interfaces=interfaces,
        gpu=_gpu_plan(facts),
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
        ami_ssm_parameter=_default_image(facts),
        root_volume=pool.root_volume,
        family=family,
        fabric=fabric_profile(facts, efa),
        env=env,
        mounts=mounts,
        # Container images are large and node-local: enroot unpacks them on the NVMe RAID
        # when there is one, else on the root volume.
        container_root=f"{scratch}/enroot" if scratch else "/var/lib/enroot",
        lustre_over_efa=over_efa,
        lustre_efa_interfaces=(
            lustre_efa_interface_count(pool.instance_type, facts.network_cards, efa_devices)
            if over_efa
            else 0
        ),
        placement_group_name=existing_placement_group(pool),
    )


def _lustre_plan(spec: ClusterSpec, catalog: Catalog) -> LustrePlan | None:
    lustre = spec.storage.lustre
    if lustre is None:
        return None
    efa = lustre_efa_enabled(lustre, spec.region, catalog.regions.get(spec.region))
    return LustrePlan(spec=lustre, efa=efa, per_unit_storage_throughput=resolved_throughput(lustre))


def _subnets(
    spec: ClusterSpec,
) -> tuple[
    ipaddress.IPv4Network | None, ipaddress.IPv4Network | None, ipaddress.IPv4Network | None
]:
    """(vpc, public, compute) CIDRs. A new VPC is split: compute gets the first half (or
    the requested prefix), public gets a /24-or-smaller slice at the end."""
    net = spec.network
    if net.vpc_id is not None:
        return None, None, net.compute_subnet_cidr
    vpc = net.vpc_cidr
    if vpc is None:
        return None, None, None
    compute_prefix = net.compute_subnet_prefix or min(vpc.prefixlen + 1, 28)
    compute = (
        next(vpc.subnets(new_prefix=compute_prefix)) if compute_prefix >= vpc.prefixlen else None
    )
    public_prefix = max(vpc.prefixlen + 2, 24) if vpc.prefixlen <= 26 else 28
    public = list(vpc.subnets(new_prefix=min(public_prefix, 28)))[-1]
    return vpc, public, compute


def build_plan(spec: ClusterSpec, catalog: Catalog | None = None) -> ClusterPlan:
    catalog = catalog or load_catalog()
    head_facts = resolve_facts(spec.head_node.instance_type, spec.head_node.instance_facts, catalog)
    if head_facts is None:
        raise PlanError(f"no facts for instance type {spec.head_node.instance_type!r}")
    lustre = _lustre_plan(spec, catalog)
    mounts: list[MountPlan] = []
    if spec.storage.home is not None:
        mounts.append(MountPlan(spec.storage.home.mount, MountKind.EFS, shared=True))
    if lustre is not None:
        mounts.append(MountPlan(lustre.spec.mount, MountKind.LUSTRE, shared=True))
    overrides = dict(spec.nccl.env)
    for pool in spec.pools:
        if pool.name == "head":
            # "head" names the head node's role in the config store and the render layout.
            raise PlanError("pools: 'head' is reserved for the head node; rename the pool")
    lustre_efa = lustre is not None and lustre.efa
    pools = tuple(_pool_plan(p, catalog, tuple(mounts), overrides, lustre_efa) for p in spec.pools)
    # The head node mounts Lustre over TCP: the stack gives it one plain ENA interface (EFA
    # is the workers' fabric, and head instance sizes mostly lack it), an EFA-enabled file
    # system still serves ENA clients, and the head's Lustre use (users staging data,
    # administration) is not the bandwidth-bound training I/O that EFA is for.
    head = HeadPlan(
        instance_type=spec.head_node.instance_type,
        facts=head_facts,
        ami=spec.head_node.ami,
        ami_ssm_parameter=UBUNTU_SSM_PARAMETER[head_facts.architecture.value],
        root_volume=spec.head_node.root_volume,
        state_volume_gib=spec.head_node.state_volume_gib,
    )
    vpc, public, compute = _subnets(spec)
    return ClusterPlan(
        name=spec.name,
        region=spec.region,
        availability_zone=spec.availability_zone,
        spec=spec,
        head=head,
        pools=pools,
        default_partition=spec.slurm.default_partition or pools[0].name,
        lustre=lustre,
        mounts=tuple(mounts),
        vpc_cidr=vpc,
        public_subnet_cidr=public,
        compute_subnet_cidr=compute,
    )
