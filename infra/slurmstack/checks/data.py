"""Data the cluster did not make: existing file systems, data repository associations, and
buckets mounted with Mountpoint for Amazon S3 (their rules: slurmstack.checks.mountpoint).

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
from slurmstack.checks.storage import S3_SAFE_KEY, inside, normal_path
from slurmstack.findings import Finding
from slurmstack.rules.data import associations, existing_file_systems
from slurmstack.spec import ClusterSpec, LustreDeployment

# CreateDataRepositoryAssociation: "You can have a maximum of 8 data repository associations
# on a file system."
MAX_ASSOCIATIONS = 8
NO_ASSOCIATIONS = frozenset({LustreDeployment.SCRATCH_1})


def nested(a: str, b: str) -> bool:
    """Two S3 prefixes (ending in '/', or empty) of which one contains the other."""
    return a.startswith(b) or b.startswith(a)


def prefix_problem(prefix: str, what: str) -> str | None:
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
        problem = prefix_problem(later.prefix, "prefix")
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
            elif nested(later.prefix, earlier.prefix):
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
