"""What the plan decides about data the cluster did not make: file systems that existed before
it (mounted, looked up at deploy time, never changed), the Lustre file system's data repository
associations (to the cluster bucket or to other buckets), and the buckets mounted on the nodes
with Mountpoint for Amazon S3."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.contract import MountKind
from slurmstack.spec import (
    ClusterSpec,
    ExistingFileSystemType,
    LustreSpec,
    RepositoryEvent,
    S3MountSpec,
)

# FSx for OpenZFS exports a file system's root volume at /fsx (FSx for OpenZFS User Guide,
# "Mounting from an Amazon EC2 instance": mount -t nfs ... fs-id.fsx.region.amazonaws.com:/fsx/).
OPENZFS_ROOT_EXPORT = "/fsx"
KIND_OF = {
    ExistingFileSystemType.LUSTRE: MountKind.LUSTRE,
    ExistingFileSystemType.EFS: MountKind.EFS,
    ExistingFileSystemType.OPENZFS: MountKind.OPENZFS,
}
# Where a node's Mountpoint caches live on its NVMe scratch: <scratch>/MOUNTPOINT_CACHE_DIR/<key>.
MOUNTPOINT_CACHE_DIR = "mountpoint-cache"


@dataclass(frozen=True)
class ExistingFileSystemPlan:
    """A file system of the definition's: where it is mounted, and how the stack finds it."""

    kind: MountKind
    file_system_id: str
    mount: str
    export_path: str  # OpenZFS's NFS export; empty for Lustre and EFS
    client_security_group_id: str | None
    definition_path: str  # where the definition names it (for messages)


def existing_file_systems(spec: ClusterSpec) -> tuple[ExistingFileSystemPlan, ...]:
    """/home when it names a file system of yours, then storage.existing in order."""
    found: list[ExistingFileSystemPlan] = []
    home = spec.storage.home
    if home is not None and home.file_system_id is not None:
        kind = MountKind.OPENZFS if home.type == "openzfs" else MountKind.EFS
        found.append(
            ExistingFileSystemPlan(
                kind=kind,
                file_system_id=home.file_system_id,
                mount=home.mount,
                export_path=_export(kind, home.export_path),
                client_security_group_id=home.client_security_group_id,
                definition_path="storage.home",
            )
        )
    for index, fs in enumerate(spec.storage.existing):
        kind = KIND_OF[fs.type]
        found.append(
            ExistingFileSystemPlan(
                kind=kind,
                file_system_id=fs.file_system_id,
                mount=fs.mount,
                export_path=_export(kind, fs.export_path),
                client_security_group_id=fs.client_security_group_id,
                definition_path=f"storage.existing[{index}]",
            )
        )
    return tuple(found)


def _export(kind: MountKind, given: str | None) -> str:
    if kind is not MountKind.OPENZFS:
        return ""
    return given or OPENZFS_ROOT_EXPORT


def client_security_groups(spec: ClusterSpec) -> tuple[str, ...]:
    """Security groups of yours every node joins, so that existing file systems admit them."""
    groups = [fs.client_security_group_id for fs in existing_file_systems(spec)]
    return tuple(sorted({g for g in groups if g is not None}))


@dataclass(frozen=True)
class AssociationPlan:
    """One data repository association of the stack's Lustre file system."""

    file_system_path: str  # /datasets
    bucket: str | None  # None: the cluster bucket
    prefix: str  # '' or 'imagenet/'
    region: str  # the bucket's Region
    import_events: tuple[str, ...]
    export_events: tuple[str, ...]
    batch_import: bool
    definition_path: str

    def repository(self, cluster_bucket: str) -> str:
        """FSx's DataRepositoryPath: s3://bucket/prefix (the prefix ends in '/', or is empty)."""
        return f"s3://{self.bucket or cluster_bucket}/{self.prefix}"


def file_system_path(prefix: str) -> str:
    """Where a bucket prefix appears in the file system: ``datasets/`` -> ``/datasets``."""
    return "/" + prefix.strip("/")


def _events(events: list[RepositoryEvent]) -> tuple[str, ...]:
    order = list(RepositoryEvent)
    return tuple(e.value for e in sorted(set(events), key=order.index))


def associations(spec: ClusterSpec) -> tuple[AssociationPlan, ...]:
    """The Lustre file system's associations: s3_import_export's (the cluster bucket's prefix
    at the directory of the same name, importing and exporting everything), then the
    definition's list."""
    lustre: LustreSpec | None = spec.storage.lustre
    if lustre is None:
        return ()
    every = tuple(e.value for e in RepositoryEvent)
    found: list[AssociationPlan] = []
    if lustre.s3_import_export is not None:
        prefix = lustre.s3_import_export.lstrip("/")
        found.append(
            AssociationPlan(
                file_system_path=file_system_path(prefix),
                bucket=None,
                prefix=prefix,
                region=spec.region,
                import_events=every,
                export_events=every,
                batch_import=True,
                definition_path="storage.lustre.s3_import_export",
            )
        )
    for index, association in enumerate(lustre.associations):
        found.append(
            AssociationPlan(
                file_system_path=association.path,
                bucket=association.bucket,
                prefix=association.prefix,
                region=association.bucket_region or spec.region,
                import_events=_events(association.import_events),
                export_events=_events(association.export_events),
                batch_import=association.batch_import,
                definition_path=f"storage.lustre.associations[{index}]",
            )
        )
    return tuple(found)


@dataclass(frozen=True)
class S3MountPlan:
    """A bucket or prefix mounted with Mountpoint for Amazon S3 on every node."""

    key: str  # from the mount path: /datasets/s3 -> datasets-s3
    mount: str
    bucket: str | None  # None: the cluster bucket
    prefix: str
    region: str
    read_only: bool
    allow_delete: bool
    allow_overwrite: bool
    allow_other: bool
    cache: bool | str  # True, False, or "auto" (where the pool has NVMe scratch)
    cache_max_gib: int | None
    metadata_ttl_seconds: int | None
    definition_path: str

    @property
    def writes(self) -> bool:
        return not self.read_only

    @property
    def label(self) -> str:
        """Everything a node does with this mount, on one line of its user data: nodes mount at
        boot, so a changed mount is a new launch template version, rolled out drained."""
        where = f"s3://{self.bucket or '<cluster bucket>'}/{self.prefix} at {self.mount}"
        flags = [self.region, "read-only" if self.read_only else "writable"]
        flags += [name for name in ("allow_delete", "allow_overwrite") if getattr(self, name)]
        flags += [] if self.allow_other else ["root only"]
        flags.append(
            "cache on scratch" if self.cache is True else "no cache" if self.cache is False
            else "cache: auto"
        )  # fmt: skip
        if self.cache_max_gib is not None:
            flags.append(f"cache up to {self.cache_max_gib} GiB")
        if self.metadata_ttl_seconds is not None:
            flags.append(f"metadata ttl {self.metadata_ttl_seconds} s")
        return f"{where} ({', '.join(flags)})"

    def cache_dir(self, scratch: str | None) -> str:
        """The node's cache directory: on the pool's NVMe scratch when it has one and the
        mount caches; '' (no data cache) otherwise, and always on the head node."""
        if scratch is None or self.cache is False:
            return ""
        return f"{scratch.rstrip('/')}/{MOUNTPOINT_CACHE_DIR}/{self.key}"


def mount_key(path: str) -> str:
    return "-".join(part for part in path.split("/") if part) or "root"


def s3_mounts(spec: ClusterSpec) -> tuple[S3MountPlan, ...]:
    return tuple(_s3_mount(spec, i, m) for i, m in enumerate(spec.storage.s3_mounts))


def _s3_mount(spec: ClusterSpec, index: int, mount: S3MountSpec) -> S3MountPlan:
    return S3MountPlan(
        key=mount_key(mount.mount),
        mount=mount.mount,
        bucket=mount.bucket,
        prefix=mount.prefix,
        region=mount.bucket_region or spec.region,
        read_only=mount.read_only,
        allow_delete=mount.allow_delete,
        allow_overwrite=mount.allow_overwrite,
        allow_other=mount.allow_other,
        cache=mount.cache,
        cache_max_gib=mount.cache_max_gib,
        metadata_ttl_seconds=mount.metadata_ttl_seconds,
        definition_path=f"storage.s3_mounts[{index}]",
    )
