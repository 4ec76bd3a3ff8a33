"""node.json: what the node agent knows about its role, written by render."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .commands import LAUNCH_RETRY_MAX_SECONDS, LAUNCH_RETRY_SECONDS, ORPHAN_GRACE_SECONDS
from .names import HEAD_ROLE
from .repair import RepairPolicy

__all__ = [
    "ElasticPool",
    "Health",
    "LaunchRetry",
    "Mount",
    "MountKind",
    "NodeConfig",
    "PoolRef",
    "S3Mount",
    "Scratch",
    "StateVolume",
]

# --- node.json ---------------------------------------------------------------------------


class MountKind(enum.StrEnum):
    NVME_RAID0 = "nvme-raid0"
    LUSTRE = "lustre"
    EFS = "efs"
    OPENZFS = "openzfs"  # an FSx for OpenZFS volume of the definition's, over NFS
    MOUNTPOINT_S3 = "mountpoint-s3"  # a bucket or prefix through Mountpoint for Amazon S3


@dataclass(frozen=True)
class Mount:
    """A shared file system. ``file_system_id``: one that existed before the cluster (the
    stack publishes what it looked up under existing_parameter); empty: the stack's own.
    ``export_path``: the NFS export of an OpenZFS volume."""

    kind: MountKind
    path: str
    file_system_id: str = ""
    export_path: str = ""


@dataclass(frozen=True)
class S3Mount:
    """A bucket or prefix the node mounts with Mountpoint for Amazon S3 (mount-s3, run as root
    with the instance role's credentials). ``bucket`` empty: the cluster bucket (its name is
    the BUCKET deploy parameter). ``cache_dir`` empty: no data cache."""

    path: str
    bucket: str
    prefix: str
    region: str
    read_only: bool = True
    allow_delete: bool = False
    allow_overwrite: bool = False
    allow_other: bool = True
    cache_dir: str = ""
    cache_max_mib: int | None = None
    metadata_ttl_seconds: int | None = None


@dataclass(frozen=True)
class StateVolume:
    device_name: str
    mount: str
    state_dir: str
    # head_node.backup: the mount is the state EFS file system both controllers share
    # (DeployParameter.STATE_EFS_ID), not the head's EBS volume.
    on_efs: bool = False


@dataclass(frozen=True)
class PoolRef:
    """A pool as the head node's controller knows it: its nodes' names and feature, its Auto
    Scaling group, and how its capacity is bought (a Capacity Block's end drains its nodes)."""

    name: str
    node_name_prefix: str
    feature: str
    group: str = ""
    capacity_type: str = "on_demand"
    reservation_id: str = ""
    # The controller places the pool's nodes under their network nodes in Slurm's topology
    # (the cluster has topology/tree and EC2 reports the pool's type).
    topology: bool = False
    # An UltraServer pool: its block topology and the blocks topology.yaml lists for it; the
    # controller moves each node into the block of its UltraServer (EC2's CapacityBlockId).
    block_topology: str = ""
    blocks: tuple[str, ...] = ()


@dataclass(frozen=True)
class ElasticPool:
    """A pool's elastic part as the head node's power programs know it: its CLOUD nodes and
    how to launch an instance for one of them (the pool's own launch template, into the
    compute subnet, bought as the pool's capacity type says)."""

    name: str
    node_names: str  # hostlist of the pool's CLOUD nodes, e.g. gpu-e[1-8]
    nodes: int
    launch_template: str
    instance_type: str
    capacity: str  # the definition's capacity type: on_demand, spot, capacity_block, ...
    placement_group: str | None = None  # the cluster placement group the nodes launch into
    max_spot_price: str | None = None
    tags: dict[str, str] = field(default_factory=dict)  # its instances' tags (ELASTIC_TAG too)
    # Its partition gives jobs whole nodes (OverSubscribe=EXCLUSIVE): a multi-node job's nodes
    # launch all or nothing where Slurm's resume file does not say whether a job is exclusive.
    exclusive: bool = False


@dataclass(frozen=True)
class LaunchRetry:
    """How long a pool waits after a failed launch before its nodes are offered again."""

    first_seconds: int = LAUNCH_RETRY_SECONDS
    max_seconds: int = LAUNCH_RETRY_MAX_SECONDS

    def delay(self, failures: int) -> int:
        """The wait after the ``failures``-th failure in a row (from 1): doubling, capped."""
        return int(min(self.first_seconds * 2 ** max(failures - 1, 0), self.max_seconds))


@dataclass(frozen=True)
class Scratch:
    mount: str


@dataclass(frozen=True)
class Health:
    """What a node of the pool checks (slurmstack.node.health): the devices it must have, the
    XIDs that drain it, when a volume counts as full, and whether its first boot runs the deep
    GPU diagnostic."""

    gpus: int = 0
    neuron_devices: int = 0
    efa_devices: int = 0
    critical_xids: tuple[int, ...] = ()
    disk_full_percent: int = 95
    deep_diagnostic: bool = False


@dataclass(frozen=True)
class NodeConfig:
    """What the node agent knows about its role (NODE_CONFIG_PATH), written by render
    (dump_document; the agent reads it with load_document). Head-only fields (state_volume,
    pools, ...) and pool-only fields (node_name_prefix, scratch, health, ...) keep their
    defaults on the other role, and a field at its default is left out of the file."""

    cluster: str
    region: str
    role: str
    parameter_prefix: str
    munge_secret: str
    mounts: tuple[Mount, ...]  # shared file systems (local scratch is ``scratch``)
    s3_mounts: tuple[S3Mount, ...] = ()  # Mountpoint for Amazon S3, after the file systems
    # head_node.backup: a second controller (DeployParameter.BACKUP_ADDRESS) that every node
    # lists; on the head role, the instance at that address is the backup.
    backup: bool = False
    # The head node.
    state_volume: StateVolume | None = None
    elastic_pools: tuple[ElasticPool, ...] = ()  # what the power programs launch
    launch_retry: LaunchRetry = field(default_factory=LaunchRetry)
    orphan_grace_seconds: int = ORPHAN_GRACE_SECONDS  # the sweep's, for an unowned instance
    pools: tuple[PoolRef, ...] = ()  # the pools whose nodes the controller looks after
    repair: RepairPolicy | None = None  # the controller's policy
    # A pool's node.
    node_name_prefix: str = ""
    elastic: bool = False  # the pool has elastic nodes: an instance may be one of them
    scratch: Scratch | None = None
    health: Health = field(default_factory=Health)
    # EFA interfaces LNet uses for Lustre; 0: over TCP; None: the cluster has no Lustre.
    lustre_efa_interfaces: int | None = None

    @property
    def is_head(self) -> bool:
        return self.role == HEAD_ROLE
