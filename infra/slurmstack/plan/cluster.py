"""The plan of a whole cluster: the pools', the head node's and the storage's plans, and
what follows from all of them (MaxNodeCount, GresTypes, the parameter names nodes read)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from slurmstack.catalog import Catalog, load_catalog
from slurmstack.contract import (
    HEAD_ROLE,
    DeployParameter,
    MountKind,
    munge_secret_name,
    parameter_name,
    parameter_prefix,
)
from slurmstack.plan.errors import PlanError
from slurmstack.plan.head import HeadPlan
from slurmstack.plan.health import HealthPlan, plan_health
from slurmstack.plan.network import head_in_public_subnet
from slurmstack.plan.people import LoginPoolPlan, plan_login_pool
from slurmstack.plan.pools import PoolPlan, plan_pool
from slurmstack.plan.slurm import gres_types, slurm_max_node_count, slurm_settings
from slurmstack.plan.storage import LustrePlan, MountPlan, plan_lustre, shared_mounts
from slurmstack.rules.data import (
    AssociationPlan,
    ExistingFileSystemPlan,
    S3MountPlan,
    associations,
    client_security_groups,
    existing_file_systems,
    s3_mounts,
)
from slurmstack.rules.facts import resolve_facts
from slurmstack.rules.fsx import LUSTRE_EFA_CONNECTION_LIMIT
from slurmstack.rules.subnets import carve
from slurmstack.spec import ClusterSpec


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
    health: HealthPlan
    login_pools: tuple[LoginPoolPlan, ...] = ()

    @property
    def users(self) -> int:
        """People the definition declares (a directory's are not counted)."""
        return len(self.spec.users)

    def login_pool(self, name: str) -> LoginPoolPlan:
        for pool in self.login_pools:
            if pool.name == name:
                return pool
        raise KeyError(name)

    @property
    def max_node_count(self) -> int:
        """Nodes with every pool at its largest (max_count)."""
        return sum(p.max_count for p in self.pools)

    @property
    def always_on_nodes(self) -> int:
        """Nodes the pools keep running (their counts): the cluster when idle."""
        return sum(p.count for p in self.pools)

    @property
    def elastic_nodes(self) -> int:
        """CLOUD nodes declared in slurm.conf for the pools' elastic parts."""
        return sum(p.elastic_nodes for p in self.pools)

    @property
    def elastic_pools(self) -> tuple[PoolPlan, ...]:
        return tuple(p for p in self.pools if p.elastic)

    @property
    def head_in_public_subnet(self) -> bool:
        """SSH from ssh_cidrs needs a reachable address: the head node then sits in the public
        subnet (the new VPC's, or network.public_subnet_id) with a public IP; otherwise it is
        private, reached through Session Manager. (The stack decides the same way, from the
        public subnet it has: stack.head_node.head_in_public_subnet.)"""
        return head_in_public_subnet(self.spec)

    @property
    def lustre_efa_connections(self) -> int:
        """EFA connections to the file system with every pool at full size: each EFA interface
        a client configures counts as one, against a limit of LUSTRE_EFA_CONNECTION_LIMIT."""
        return sum(p.max_count * p.lustre_efa_interfaces for p in self.pools)

    @property
    def lustre_efa_connections_exceed_limit(self) -> bool:
        return self.lustre_efa_connections > LUSTRE_EFA_CONNECTION_LIMIT

    @property
    def gpus(self) -> int:
        return sum(p.gpus for p in self.pools)

    @property
    def slurm_max_node_count(self) -> int:
        """MaxNodeCount (slurmstack.plan.slurm)."""
        return slurm_max_node_count(self.always_on_nodes, self.elastic_nodes)

    @property
    def gres_types(self) -> tuple[str, ...]:
        """GresTypes (slurmstack.plan.slurm)."""
        return gres_types(p.gpu.gres_name for p in self.pools if p.gpu is not None)

    @property
    def slurm_settings(self) -> tuple[tuple[str, str], ...]:
        """The definition's extra slurm.conf keys, in the order written (appended last)."""
        return slurm_settings(self.spec)

    @property
    def parameter_prefix(self) -> str:
        """SSM parameter path holding deploy-time values nodes read at boot."""
        return parameter_prefix(self.name)

    @property
    def munge_secret_name(self) -> str:
        return munge_secret_name(self.name)

    def parameter(self, key: DeployParameter | str) -> str:
        """Full SSM parameter name of a deploy-time value, e.g.
        /slurmstack/llm-train/head/address."""
        return parameter_name(self.parameter_prefix, key)

    @property
    def home(self) -> MountPlan | None:
        """The shared /home (the stack's EFS, or a file system of yours), if any."""
        home = self.spec.storage.home
        if home is None:
            return None
        return next((m for m in self.mounts if m.path == home.mount and m.shared), None)

    @property
    def file_systems(self) -> tuple[MountPlan, ...]:
        """The shared file systems every node mounts (the agent's mounts step), the buckets
        mounted with Mountpoint aside (its s3-mounts step)."""
        return tuple(m for m in self.mounts if m.kind is not MountKind.MOUNTPOINT_S3)

    @property
    def creates_home(self) -> bool:
        """The stack makes /home's EFS file system (storage.home names none of yours)."""
        home = self.spec.storage.home
        return home is not None and home.file_system_id is None

    @property
    def existing_file_systems(self) -> tuple[ExistingFileSystemPlan, ...]:
        return existing_file_systems(self.spec)

    @property
    def existing_client_groups(self) -> tuple[str, ...]:
        """Security groups of yours every node joins (so your file systems admit them)."""
        return client_security_groups(self.spec)

    @property
    def associations(self) -> tuple[AssociationPlan, ...]:
        return associations(self.spec)

    @property
    def s3_mounts(self) -> tuple[S3MountPlan, ...]:
        return s3_mounts(self.spec)

    def pool(self, name: str) -> PoolPlan:
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(name)


def build_plan(spec: ClusterSpec, catalog: Catalog | None = None) -> ClusterPlan:
    catalog = catalog or load_catalog()
    head_facts = resolve_facts(spec.head_node.instance_type, spec.head_node.instance_facts, catalog)
    if head_facts is None:
        raise PlanError(f"no facts for instance type {spec.head_node.instance_type!r}")
    lustre = plan_lustre(spec, catalog)
    mounts = shared_mounts(spec, lustre)
    overrides = dict(spec.nccl.env)
    for pool in spec.pools:
        if pool.name == HEAD_ROLE:
            # "head" names the head node's role in the config store and the render layout.
            raise PlanError("pools: 'head' is reserved for the head node; rename the pool")
    lustre_efa = lustre is not None and lustre.efa
    pools = tuple(plan_pool(p, catalog, mounts, overrides, lustre_efa) for p in spec.pools)
    # The head node mounts Lustre over TCP: the stack gives it one plain ENA interface (EFA
    # is the workers' fabric, and head instance sizes mostly lack it), an EFA-enabled file
    # system still serves ENA clients, and the head's Lustre use (users staging data,
    # administration) is not the bandwidth-bound training I/O that EFA is for.
    head = HeadPlan(
        instance_type=spec.head_node.instance_type,
        facts=head_facts,
        ami=spec.head_node.ami,
        root_volume=spec.head_node.root_volume,
        state_volume_gib=spec.head_node.state_volume_gib,
        auto_recovery=spec.head_node.auto_recovery,
        backup=spec.head_node.backup,
    )
    vpc, public, compute = carve(spec)
    return ClusterPlan(
        name=spec.name,
        region=spec.region,
        availability_zone=spec.availability_zone,
        spec=spec,
        head=head,
        pools=pools,
        default_partition=spec.slurm.default_partition or pools[0].name,
        lustre=lustre,
        mounts=mounts,
        vpc_cidr=vpc,
        public_subnet_cidr=public,
        compute_subnet_cidr=compute,
        health=plan_health(spec.health),
        login_pools=tuple(plan_login_pool(p, catalog) for p in spec.login_pools),
    )
