"""node.json: what the node agent knows about its role, written by render."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from .commands import LAUNCH_RETRY_MAX_SECONDS, LAUNCH_RETRY_SECONDS
from .names import HEAD_ROLE
from .repair import RepairPolicy, read_repair_policy, repair_policy_data

__all__ = [
    "GENERATED_BY",
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
    "node_config_json",
    "read_node_config",
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
    tags: tuple[tuple[str, str], ...] = ()  # the pool's instance tags (ELASTIC_TAG added)


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
    """What the node agent knows about its role (NODE_CONFIG_PATH), written by render.
    Head-only fields (state_volume, pools) and pool-only fields (node_name_prefix, scratch,
    health, lustre_efa_interfaces) are left out of the file on the other role."""

    cluster: str
    region: str
    role: str
    parameter_prefix: str
    munge_secret: str
    mounts: tuple[Mount, ...]  # shared file systems (local scratch is ``scratch``)
    s3_mounts: tuple[S3Mount, ...] = ()  # Mountpoint for Amazon S3, after the file systems
    # The head node.
    state_volume: StateVolume | None = None
    elastic_pools: tuple[ElasticPool, ...] = ()  # what the power programs launch
    launch_retry: LaunchRetry = field(default_factory=LaunchRetry)
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


GENERATED_BY = "slurmstack"


def node_config_json(config: NodeConfig) -> str:
    """node.json as render writes it (sorted keys, two-space indent)."""
    data: dict[str, Any] = {
        "generated_by": GENERATED_BY,
        "cluster": config.cluster,
        "region": config.region,
        "role": config.role,
        "parameter_prefix": config.parameter_prefix,
        "munge_secret": config.munge_secret,
        "mounts": [_mount_json(m) for m in config.mounts],
    }
    if config.s3_mounts:
        data["s3_mounts"] = [vars(m).copy() for m in config.s3_mounts]
    if config.is_head:
        volume = config.state_volume
        data["state_volume"] = None if volume is None else vars(volume).copy()
        data["pools"] = [vars(p).copy() for p in config.pools]
        if config.elastic_pools:
            data["elastic_pools"] = [_elastic_json(p) for p in config.elastic_pools]
            data["launch_retry"] = vars(config.launch_retry).copy()
        data["repair"] = None if config.repair is None else repair_policy_data(config.repair)
    else:
        data["node_name_prefix"] = config.node_name_prefix
        if config.elastic:
            data["elastic"] = True
        data["scratch"] = None if config.scratch is None else {"mount": config.scratch.mount}
        health = vars(config.health).copy()
        health["critical_xids"] = list(config.health.critical_xids)
        data["health"] = health
        if config.lustre_efa_interfaces is not None:
            data["lustre_efa_interfaces"] = config.lustre_efa_interfaces
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _mount_json(mount: Mount) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": mount.kind.value, "path": mount.path}
    if mount.file_system_id:
        data["file_system_id"] = mount.file_system_id
    if mount.export_path:
        data["export_path"] = mount.export_path
    return data


def _mount(data: dict[str, Any]) -> Mount:
    return Mount(
        MountKind(data["kind"]),
        str(data["path"]),
        str(data.get("file_system_id") or ""),
        str(data.get("export_path") or ""),
    )


def _elastic_json(pool: ElasticPool) -> dict[str, Any]:
    data = vars(pool).copy()
    data["tags"] = dict(pool.tags)
    return data


def _elastic_pool(data: dict[str, Any]) -> ElasticPool:
    return ElasticPool(**{**data, "tags": tuple(sorted(data.get("tags", {}).items()))})


def read_node_config(text: str) -> NodeConfig:
    """The NodeConfig of a node.json (ValueError or KeyError for a malformed one)."""
    data = json.loads(text)
    volume = data.get("state_volume")
    scratch = data.get("scratch")
    health = dict(data.get("health") or {})
    health["critical_xids"] = tuple(health.get("critical_xids") or ())
    repair = data.get("repair")
    return NodeConfig(
        cluster=str(data["cluster"]),
        region=str(data["region"]),
        role=str(data["role"]),
        parameter_prefix=str(data["parameter_prefix"]),
        munge_secret=str(data["munge_secret"]),
        mounts=tuple(_mount(m) for m in data["mounts"]),
        s3_mounts=tuple(S3Mount(**m) for m in data.get("s3_mounts") or ()),
        state_volume=StateVolume(**volume) if volume else None,
        pools=tuple(PoolRef(**p) for p in data.get("pools") or ()),
        elastic_pools=tuple(_elastic_pool(p) for p in data.get("elastic_pools") or ()),
        launch_retry=LaunchRetry(**(data.get("launch_retry") or {})),
        node_name_prefix=str(data.get("node_name_prefix") or ""),
        elastic=bool(data.get("elastic", False)),
        scratch=Scratch(str(scratch["mount"])) if scratch else None,
        health=Health(**health),
        repair=read_repair_policy(repair) if repair else None,
        lustre_efa_interfaces=data.get("lustre_efa_interfaces"),
    )
