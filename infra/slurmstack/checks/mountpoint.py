"""Buckets mounted with Mountpoint for Amazon S3 (storage.s3_mounts): clean prefixes off the
stack's own, write flags only on writable mounts, the cache on NVMe scratch, the bucket's Region,
and a mount path of its own. Mountpoint's rules come from its CONFIGURATION.md at the pinned
release (image_pins.json, mountpoint_s3).
"""

from __future__ import annotations

from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error, warning
from slurmstack.checks.data import nested, prefix_problem
from slurmstack.checks.storage import inside, mount_points, normal_path
from slurmstack.contract import CONFIG_PREFIX, IMAGE_PREFIX, LOGS_PREFIX
from slurmstack.findings import Finding
from slurmstack.rules.data import associations
from slurmstack.spec import ClusterSpec

# The cluster bucket's own prefixes: the config store, the nodes' logs, the image bundles.
# A Mountpoint of the cluster bucket must name a prefix outside them (the node role is
# scoped to exactly what it mounts, and these are the stack's).
STACK_PREFIXES = (CONFIG_PREFIX, LOGS_PREFIX, IMAGE_PREFIX)


# why: Mountpoint takes a prefix ending in '/' (CONFIGURATION.md, "Mounting a bucket prefix"),
# and the node role grants exactly the prefix, so it must be a clean one.
@rule
def s3_mount_prefix(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, mount in enumerate(spec.storage.s3_mounts):
        path = f"storage.s3_mounts[{index}].prefix"
        problem = prefix_problem(mount.prefix, "prefix")
        if problem is not None:
            yield error(path, problem)
        elif mount.bucket is None:
            stack = [p for p in STACK_PREFIXES if nested(mount.prefix, p)]
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
