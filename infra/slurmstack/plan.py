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
from dataclasses import dataclass

from slurmstack.catalog import Catalog, InstanceFacts, load_catalog
from slurmstack.facts import resolve_facts
from slurmstack.spec import (
    CapacitySpec,
    CapacityType,
    ClusterSpec,
    LustreDeployment,
    LustreSpec,
    PoolSpec,
    RootVolume,
)

# Memory kept back from Slurm for the OS, the NVIDIA/EFA drivers, page cache for
# Lustre and the daemons. The OS sees less than the nominal EC2 figure, and slurmd drains
# a node whose RealMemory exceeds what it finds, so the headroom is at least 2 GiB and 5%.
MEMORY_HEADROOM_FRACTION = 0.05
MEMORY_HEADROOM_MIN_MIB = 2048

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
    def gres(self) -> str:
        return f"gpu:{self.gres_type}:{self.count}"


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
    placement_group: bool
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

    @property
    def partition(self) -> str:
        return self.name

    @property
    def nodeset(self) -> str:
        return f"{self.name}_nodes"

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
    def gpus(self) -> int:
        return sum(p.gpus for p in self.pools)

    @property
    def parameter_prefix(self) -> str:
        """SSM parameter path holding deploy-time values nodes read at boot."""
        return f"/slurmstack/{self.name}"

    @property
    def munge_secret_name(self) -> str:
        return f"slurmstack/{self.name}/munge-key"

    def parameter(self, key: DeployParameter) -> str:
        """Full SSM parameter name of a deploy-time value, e.g. /slurmstack/llm-train/head/address."""
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


def resolve_placement_group(pool: PoolSpec, efa: bool) -> bool:
    if pool.placement_group == "auto":
        # Capacity Block instances are already placed together by AWS and refuse a
        # placement group; elsewhere EFA traffic wants the lowest-latency placement.
        return efa and pool.capacity.type is not CapacityType.CAPACITY_BLOCK
    return bool(pool.placement_group)


def _pool_plan(pool: PoolSpec, catalog: Catalog) -> PoolPlan:
    facts = resolve_facts(pool.instance_type, pool.instance_facts, catalog)
    if facts is None:
        raise PlanError(f"no facts for instance type {pool.instance_type!r}")
    efa = resolve_efa(pool, facts)
    sockets = facts.sockets
    return PoolPlan(
        name=pool.name,
        instance_type=pool.instance_type,
        facts=facts,
        count=pool.count,
        capacity=pool.capacity,
        efa=efa,
        placement_group=resolve_placement_group(pool, efa),
        interfaces=efa_interfaces(facts, efa),
        gpu=_gpu_plan(facts),
        real_memory_mib=schedulable_memory_mib(facts),
        cpus=facts.vcpus,
        sockets=sockets,
        cores_per_socket=max(facts.cores // sockets, 1),
        threads_per_core=facts.threads_per_core,
        # Multi-node training jobs on the fabric want whole nodes: a second job on the
        # same node would share its GPUs' NVLink and EFA bandwidth.
        exclusive=efa and facts.accelerator is not None,
        local_scratch=pool.local_scratch,
        ami=pool.ami,
        ami_ssm_parameter=_default_image(facts),
        root_volume=pool.root_volume,
    )


LUSTRE_EFA_DEPLOYMENTS = frozenset({LustreDeployment.PERSISTENT_2})


def _lustre_plan(spec: ClusterSpec, catalog: Catalog) -> LustrePlan | None:
    lustre = spec.storage.lustre
    if lustre is None:
        return None
    region = catalog.regions.get(spec.region)
    allowed = lustre.deployment in LUSTRE_EFA_DEPLOYMENTS and bool(region and region.fsx_lustre_efa)
    efa = allowed if lustre.efa == "auto" else bool(lustre.efa)
    throughput = lustre.throughput_per_tib
    if throughput is None and lustre.deployment is LustreDeployment.PERSISTENT_2:
        throughput = 250
    if throughput is None and lustre.deployment is LustreDeployment.PERSISTENT_1:
        throughput = 200 if lustre.storage_type.value == "SSD" else 40
    return LustrePlan(spec=lustre, efa=efa, per_unit_storage_throughput=throughput)


def _subnets(
    spec: ClusterSpec,
) -> tuple[ipaddress.IPv4Network | None, ipaddress.IPv4Network | None, ipaddress.IPv4Network | None]:
    """(vpc, public, compute) CIDRs. A new VPC is split: compute gets the first half (or
    the requested prefix), public gets a /24-or-smaller slice at the end."""
    net = spec.network
    if net.vpc_id is not None:
        return None, None, net.compute_subnet_cidr
    vpc = net.vpc_cidr
    if vpc is None:
        return None, None, None
    compute_prefix = net.compute_subnet_prefix or min(vpc.prefixlen + 1, 28)
    compute = next(vpc.subnets(new_prefix=compute_prefix)) if compute_prefix >= vpc.prefixlen else None
    public_prefix = max(vpc.prefixlen + 2, 24) if vpc.prefixlen <= 26 else 28
    public = list(vpc.subnets(new_prefix=min(public_prefix, 28)))[-1]
    return vpc, public, compute


def build_plan(spec: ClusterSpec, catalog: Catalog | None = None) -> ClusterPlan:
    catalog = catalog or load_catalog()
    head_facts = resolve_facts(spec.head_node.instance_type, spec.head_node.instance_facts, catalog)
    if head_facts is None:
        raise PlanError(f"no facts for instance type {spec.head_node.instance_type!r}")
    pools = tuple(_pool_plan(p, catalog) for p in spec.pools)
    head = HeadPlan(
        instance_type=spec.head_node.instance_type,
        facts=head_facts,
        ami=spec.head_node.ami,
        ami_ssm_parameter=UBUNTU_SSM_PARAMETER[head_facts.architecture.value],
        root_volume=spec.head_node.root_volume,
        state_volume_gib=spec.head_node.state_volume_gib,
    )
    lustre = _lustre_plan(spec, catalog)
    mounts: list[MountPlan] = []
    if spec.storage.home is not None:
        mounts.append(MountPlan(spec.storage.home.mount, MountKind.EFS, shared=True))
    if lustre is not None:
        mounts.append(MountPlan(lustre.spec.mount, MountKind.LUSTRE, shared=True))
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
