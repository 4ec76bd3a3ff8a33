"""What the plan decides about storage: the mounts of every node and the Lustre file system."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.catalog import Catalog
from slurmstack.contract import MountKind
from slurmstack.rules.data import existing_file_systems, s3_mounts
from slurmstack.rules.fsx import lustre_efa_enabled, resolved_throughput
from slurmstack.spec import ClusterSpec, LustreSpec


@dataclass(frozen=True)
class MountPlan:
    """A mount of every node (shared) or of a pool's nodes (its scratch). ``file_system_id``:
    a file system that existed before the cluster; ``export_path``: an OpenZFS volume's."""

    path: str
    kind: MountKind
    shared: bool
    file_system_id: str | None = None
    export_path: str = ""

    @property
    def existing(self) -> bool:
        return self.file_system_id is not None

    @property
    def label(self) -> str:
        """The mount as the user data names it: its path, and for a file system of yours which
        one (nodes mount at boot, so another one is a new launch template version)."""
        if self.file_system_id is None:
            return self.path
        export = f":{self.export_path}" if self.export_path else ""
        return f"{self.path} (your {self.kind.value} {self.file_system_id}{export})"


@dataclass(frozen=True)
class LustrePlan:
    spec: LustreSpec
    efa: bool
    per_unit_storage_throughput: int | None


def plan_lustre(spec: ClusterSpec, catalog: Catalog) -> LustrePlan | None:
    lustre = spec.storage.lustre
    if lustre is None:
        return None
    efa = lustre_efa_enabled(lustre, spec.region, catalog.regions.get(spec.region))
    return LustrePlan(spec=lustre, efa=efa, per_unit_storage_throughput=resolved_throughput(lustre))


def shared_mounts(spec: ClusterSpec, lustre: LustrePlan | None) -> tuple[MountPlan, ...]:
    """The shared file systems every node mounts: the stack's /home on EFS, its Lustre, the
    file systems that existed before the cluster (an existing /home first), then the buckets
    mounted with Mountpoint for Amazon S3 (last: a Mountpoint cache may live on scratch)."""
    mounts: list[MountPlan] = []
    home = spec.storage.home
    if home is not None and home.file_system_id is None:
        mounts.append(MountPlan(home.mount, MountKind.EFS, shared=True))
    if lustre is not None:
        mounts.append(MountPlan(lustre.spec.mount, MountKind.LUSTRE, shared=True))
    for fs in existing_file_systems(spec):
        mounts.append(
            MountPlan(fs.mount, fs.kind, True, file_system_id=fs.file_system_id,
                      export_path=fs.export_path)
        )  # fmt: skip
    for s3 in s3_mounts(spec):
        mounts.append(MountPlan(s3.mount, MountKind.MOUNTPOINT_S3, shared=True))
    return tuple(mounts)
