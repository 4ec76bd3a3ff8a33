"""Data the cluster did not make: existing file systems, data repository associations, and
buckets mounted with Mountpoint for Amazon S3.

FSx's rules come from the FSx for Lustre User Guide, "Linking your file system to an Amazon
S3 bucket" (https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html)
and the FSx API Reference, CreateDataRepositoryAssociation: at most 8 associations per file
system; each with its own file system directory and its own bucket or prefix; no two file
system paths nested; "/" only as the one association; none on Scratch 1 (nor Lustre 2.10,
which slurmstack never makes). Mountpoint's come from its CONFIGURATION.md at the pinned
release (image_pins.json, mountpoint_s3).
"""

from __future__ import annotations

from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error, warning
from slurmstack.checks.storage import S3_SAFE_KEY, inside, mount_points, normal_path
from slurmstack.contract import CONFIG_PREFIX, IMAGE_PREFIX, LOGS_PREFIX
from slurmstack.data import associations, existing_file_systems
from slurmstack.findings import Finding
from slurmstack.spec import ClusterSpec, LustreDeployment

# CreateDataRepositoryAssociation: "You can have a maximum of 8 data repository associations
# on a file system."
MAX_ASSOCIATIONS = 8
NO_ASSOCIATIONS = frozenset({LustreDeployment.SCRATCH_1})
# The cluster bucket's own prefixes: the config store, the nodes' logs, the image bundles.
# A Mountpoint of the cluster bucket must name a prefix outside them (the node role is
# scoped to exactly what it mounts, and these are the stack's).
STACK_PREFIXES = (CONFIG_PREFIX, LOGS_PREFIX, IMAGE_PREFIX)


def _nested(a: str, b: str) -> bool:
    """Two S3 prefixes (ending in '/', or empty) of which one contains the other."""
    return a.startswith(b) or b.startswith(a)


def _prefix_problem(prefix: str, what: str) -> str | None:
    """Why a prefix is not one FSx and Mountpoint take, or None."""
    if not prefix:
        return None
    if prefix.startswith("/"):
        return (
            f"{what} {prefix!r} starts with '/'; S3 keys have none (write {prefix.lstrip('/')!r})"
        )
    if not prefix.endswith("/"):
        return f"{what} {prefix!r} must end with '/' (write {prefix + '/'!r})"
    if any(s in ("", ".", "..") for s in prefix[:-1].split("/")):
        return f"{what} {prefix!r} has an empty, '.' or '..' segment; write it as name/name/"
    if not S3_SAFE_KEY.match(prefix):
        bad = sorted({c for c in prefix if not S3_SAFE_KEY.match(c)})
        return (
            f"{what} {prefix!r} contains {', '.join(repr(c) for c in bad)}; use letters, digits "
            "and ! - _ . * ' ( ) /"
        )
    return None


# why: an existing file system lives in its own VPC; a VPC the stack makes cannot reach it.
@rule
def existing_needs_vpc(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    if spec.network.vpc_id is not None:
        return
    for fs in existing_file_systems(spec):
        yield error(
            f"{fs.definition_path}.file_system_id",
            f"{fs.file_system_id} is a file system of yours, but the stack makes a new VPC that "
            "cannot reach it; set network.vpc_id (and the subnets) to the file system's VPC",
        )


# why: the same file system twice is two mounts of one thing (and two lookups, two rules).
@rule
def existing_once(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    seen: dict[str, str] = {}
    for fs in existing_file_systems(spec):
        if fs.file_system_id in seen:
            yield error(
                f"{fs.definition_path}.file_system_id",
                f"{fs.file_system_id} is already mounted by {seen[fs.file_system_id]}; mount it "
                "once (its directories are reachable under that mount)",
            )
        seen.setdefault(fs.file_system_id, fs.definition_path)


# why: the stack makes EFS for /home, never OpenZFS; and an export path is OpenZFS's alone.
@rule
def home_openzfs(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    home = spec.storage.home
    if home is None:
        return
    if home.type == "openzfs" and home.file_system_id is None:
        yield error(
            "storage.home.file_system_id",
            "type openzfs mounts an FSx for OpenZFS file system of yours (the stack makes EFS "
            "only): give its file_system_id, or use type: efs",
        )
    if home.export_path is not None and home.type != "openzfs":
        yield error("storage.home.export_path", "export_path is for openzfs only; remove it")
    if home.client_security_group_id is not None and home.file_system_id is None:
        yield error(
            "storage.home.client_security_group_id",
            "client_security_group_id is for a file system of yours (file_system_id); the "
            "stack's own EFS admits the cluster already: remove it",
        )
    for index, fs in enumerate(spec.storage.existing):
        if fs.export_path is not None and fs.type.value != "openzfs":
            yield error(
                f"storage.existing[{index}].export_path",
                f"export_path is for openzfs only ({fs.type.value} has none); remove it",
            )


# why: FSx refuses a 9th association (MAX_ASSOCIATIONS) after the file system exists.
@rule
def association_count(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    found = associations(spec)
    if len(found) > MAX_ASSOCIATIONS:
        yield error(
            "storage.lustre.associations",
            f"{len(found)} data repository associations (s3_import_export counts as one); FSx "
            f"allows {MAX_ASSOCIATIONS} per file system: merge prefixes under one directory, "
            "or mount the rest with storage.s3_mounts",
        )


# why: Scratch 1 file systems take no association (NO_ASSOCIATIONS); it fails after the
# file system is made.
@rule
def association_deployment(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    lustre = spec.storage.lustre
    if lustre is None or not lustre.associations or lustre.deployment not in NO_ASSOCIATIONS:
        return
    yield error(
        "storage.lustre.associations",
        f"{lustre.deployment.value} file systems take no data repository association; use "
        "deployment: PERSISTENT_2 (or SCRATCH_2), or mount the buckets with storage.s3_mounts",
    )


# why: FSx links a directory to one repository, and refuses nested directories and "/" next
# to any other association.
@rule
def association_paths(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    found = associations(spec)
    for i, later in enumerate(found):
        path = f"{later.definition_path}" + (".path" if later.definition_path.endswith("]") else "")
        mine = normal_path(later.file_system_path)
        if mine == "/" and len(found) > 1:
            yield error(
                path,
                "the file system path '/' links the whole file system, so it can be the only "
                "association; give each association a directory such as /datasets",
            )
            continue
        for earlier in found[:i]:
            theirs = normal_path(earlier.file_system_path)
            if theirs == "/":
                continue
            if mine == theirs:
                yield error(
                    path,
                    f"{later.file_system_path} is already linked by {earlier.definition_path}; "
                    "each association needs a directory of its own",
                )
            elif inside(mine, theirs) or inside(theirs, mine):
                yield error(
                    path,
                    f"{later.file_system_path} and {earlier.file_system_path} "
                    f"({earlier.definition_path}) nest; FSx refuses overlapping association "
                    "paths: use sibling directories such as /datasets and /checkpoints",
                )


# why: each association needs its own bucket or prefix; nested prefixes in one bucket make
# an export from one directory an import into another.
@rule
def association_repositories(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    found = associations(spec)
    for i, later in enumerate(found):
        problem = _prefix_problem(later.prefix, "prefix")
        if problem is not None and later.definition_path.endswith("]"):
            yield error(f"{later.definition_path}.prefix", problem)
            continue
        for earlier in found[:i]:
            if (later.bucket or "") != (earlier.bucket or ""):
                continue
            where = f"s3://{later.bucket or '<cluster bucket>'}/{later.prefix}"
            if later.prefix == earlier.prefix:
                yield error(
                    later.definition_path,
                    f"{where} is already linked by {earlier.definition_path}; FSx links each "
                    "bucket or prefix to one directory",
                )
            elif _nested(later.prefix, earlier.prefix):
                yield warning(
                    later.definition_path,
                    f"{where} and {earlier.definition_path}'s prefix {earlier.prefix!r} nest: "
                    "what one directory exports the other imports again; use disjoint prefixes",
                )


# why: automatic import listens to S3 event notifications, which reach only the bucket's own
# Region (ParallelCluster's FsxAutoImportValidator: "FSx auto import is not supported for
# cross-region buckets"); without it, every byte crosses Regions at a per-GB charge.
@rule
def association_region(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for association in associations(spec):
        if association.region == spec.region:
            continue
        path = f"{association.definition_path}.bucket_region"
        if association.import_events:
            yield error(
                path,
                f"the bucket is in {association.region}, the file system in {spec.region}: FSx "
                "imports automatically only from its own Region; set import_events: [] (import "
                "on access or with import tasks), or copy the data to a bucket in "
                f"{spec.region}",
            )
        else:
            yield warning(
                path,
                f"the bucket is in {association.region}: every import and export crosses "
                "Regions, charged per GB (Amazon S3 pricing, data transfer between Regions)",
            )


# why: Mountpoint takes a prefix ending in '/' (CONFIGURATION.md, "Mounting a bucket prefix"),
# and the node role grants exactly the prefix, so it must be a clean one.
@rule
def s3_mount_prefix(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, mount in enumerate(spec.storage.s3_mounts):
        path = f"storage.s3_mounts[{index}].prefix"
        problem = _prefix_problem(mount.prefix, "prefix")
        if problem is not None:
            yield error(path, problem)
        elif mount.bucket is None:
            stack = [p for p in STACK_PREFIXES if _nested(mount.prefix, p)]
            if stack:
                yield error(
                    path,
                    f"prefix {mount.prefix!r} of the cluster bucket covers the stack's own "
                    f"{', '.join(stack)} (configuration, node logs, image bundles): name a "
                    "prefix of your data, such as datasets/ or checkpoints/",
                )


# why: write flags on a read-only mount are a contradiction Mountpoint refuses at mount time.
@rule
def s3_mount_flags(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, mount in enumerate(spec.storage.s3_mounts):
        for flag in ("allow_delete", "allow_overwrite"):
            if mount.read_only and getattr(mount, flag):
                yield error(
                    f"storage.s3_mounts[{index}].{flag}",
                    f"{flag} on a read_only mount: set read_only: false to write (checkpoint "
                    f"export), or remove {flag}",
                )


# why: the cache belongs on the NVMe scratch; a pool without one would cache on its root volume.
@rule
def s3_mount_cache(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, mount in enumerate(spec.storage.s3_mounts):
        if mount.cache is not True:
            continue
        bare = [p.name for p in spec.pools if p.local_scratch is None]
        if bare:
            yield error(
                f"storage.s3_mounts[{index}].cache",
                f"cache: true caches on the NVMe scratch, which pools {', '.join(bare)} do not "
                "have (local_scratch); use cache: auto (cache where there is scratch) or false",
            )


# why: a bucket in another Region mounts, but every read crosses Regions at a per-GB charge and
# an inter-Region round trip per request.
@rule
def s3_mount_region(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, mount in enumerate(spec.storage.s3_mounts):
        if mount.bucket_region is not None and mount.bucket_region != spec.region:
            yield warning(
                f"storage.s3_mounts[{index}].bucket_region",
                f"the bucket is in {mount.bucket_region}, the cluster in {spec.region}: every "
                "read crosses Regions (charged per GB, Amazon S3 pricing) with a longer round "
                f"trip; copy the data to a bucket in {spec.region} for training",
            )


def _used_paths(spec: ClusterSpec) -> list[tuple[str, str, str]]:
    """(definition path, node path, what uses it) of every path the cluster mounts or links,
    the Mountpoint mounts aside."""
    shared, local = mount_points(spec, s3=False)
    used = [(p, m, "a shared file system") for p, m in shared]
    used += [(p, m, "the pool's NVMe scratch") for p, m in local]
    lustre = spec.storage.lustre
    if lustre is not None:
        for association in associations(spec):
            inside = f"{lustre.mount.rstrip('/')}{normal_path(association.file_system_path)}"
            used.append((association.definition_path, inside, "a data repository association"))
    return used


# why: a FUSE mount on (or over, or under) a path the cluster already uses hides one of the two
# and depends on the order of mounts at boot.
@rule
def s3_mount_path_in_use(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    used = _used_paths(spec)
    mounts = spec.storage.s3_mounts
    for index, mount in enumerate(mounts):
        path = f"storage.s3_mounts[{index}].mount"
        mine = normal_path(mount.mount)
        if mine == "/":
            continue  # mount_reserved reports it
        others = used + [
            (f"storage.s3_mounts[{j}].mount", m.mount, "another Mountpoint mount")
            for j, m in enumerate(mounts[:index])
        ]
        for where, theirs, what in others:
            normal = normal_path(theirs)
            if mine == normal:
                yield error(
                    path,
                    f"{mount.mount} is already {what} ({where}); give the bucket a path of its "
                    "own, such as /s3/<name>",
                )
            elif inside(mine, normal):
                yield error(
                    path,
                    f"{mount.mount} is inside {theirs}, {what} ({where}): a FUSE mount there "
                    "hides that file system's directory; mount it beside it, such as /s3/<name>",
                )
            elif inside(normal, mine):
                yield error(
                    path,
                    f"{mount.mount} would cover {theirs}, {what} ({where}); mount the bucket at "
                    "a path of its own",
                )
