"""Storage: mount points, and FSx for Lustre options as AWS accepts them.

FSx for Lustre figures come from the Amazon FSx API Reference and the FSx for Lustre User
Guide; each constant names its source.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error, pools_with_facts, warning
from slurmstack.findings import Finding
from slurmstack.rules.fsx import (
    HDD_STEP,
    LUSTRE_EFA_CONNECTION_LIMIT,
    METADATA_IOPS,
    SCRATCH_1_STEP,
    SSD_STEP,
    THROUGHPUT,
    lustre_client_efa_interfaces,
    lustre_efa_blockers,
    lustre_efa_enabled,
    reads_lustre_with_gpudirect_storage,
    resolved_throughput,
    round_up,
)
from slurmstack.spec import (
    ClusterSpec,
    LustreDeployment,
    LustreStorageType,
)

# Where users' home directories are (useradd's default HOME), on every node.
HOME_MOUNT = "/home"

P1, P2 = LustreDeployment.PERSISTENT_1, LustreDeployment.PERSISTENT_2
S1, S2 = LustreDeployment.SCRATCH_1, LustreDeployment.SCRATCH_2
HDD = LustreStorageType.HDD

# "Overview of data repositories" (FSx for Lustre User Guide): data repository associations
# and automatic export are not available on Scratch 1 file systems.
NO_DATA_REPOSITORY = frozenset({S1})

# S3 object key characters that need no special handling (Amazon S3 User Guide, "Naming
# objects": safe characters), plus '/' as the prefix delimiter.
S3_SAFE_KEY = re.compile(r"^[A-Za-z0-9!_.*'()/-]+$")

# Mount points that belong to the operating system, the EFA/NVIDIA software on the Deep
# Learning AMI (/opt/amazon: EFA installer, Open MPI, aws-ofi-nccl; /opt/dlami: its own NVMe
# mount), or are node-local by nature (/tmp). Mounting over them hides what is there.
RESERVED_MOUNT_TREES = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/snap",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
    "/opt/amazon",
    "/opt/aws",
    "/opt/dlami",
)


def normal_path(path: str) -> str:
    return "/" + "/".join(part for part in path.split("/") if part)


def inside(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree + "/")


def mount_points(
    spec: ClusterSpec, *, s3: bool = True
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(shared mounts, node-local mounts) as (path in the definition, mount point). ``s3``:
    with the Mountpoint for S3 mounts (whose overlaps checks.data reports in its own words)."""
    shared: list[tuple[str, str]] = []
    if spec.storage.home is not None:
        shared.append(("storage.home.mount", spec.storage.home.mount))
    if spec.storage.lustre is not None:
        shared.append(("storage.lustre.mount", spec.storage.lustre.mount))
    shared += [
        (f"storage.existing[{i}].mount", e.mount) for i, e in enumerate(spec.storage.existing)
    ]
    if s3:
        shared += [
            (f"storage.s3_mounts[{i}].mount", m.mount) for i, m in enumerate(spec.storage.s3_mounts)
        ]
    local = [
        (f"pools[{i}].local_scratch", pool.local_scratch)
        for i, pool in enumerate(spec.pools)
        if pool.local_scratch is not None
    ]
    return shared, local


# why: mounting over an OS or driver directory hides it and breaks the node at boot.
@rule
def mount_reserved(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    shared, local = mount_points(spec)
    for path, mount in shared + local:
        normal = normal_path(mount)
        if normal == "/":
            yield error(path, f"mount point {mount!r} is the root file system; use e.g. /fsx")
            continue
        for tree in RESERVED_MOUNT_TREES:
            if inside(normal, tree):
                yield error(
                    path,
                    f"mount point {mount!r} is inside {tree}, which the operating system or "
                    "the Deep Learning AMI uses; mount elsewhere (e.g. /fsx, /scratch, /data)",
                )
                break


# why: 'a/../b', '//' or a trailing '/' make mount units and overlap checks disagree.
@rule
def mount_path_form(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    shared, local = mount_points(spec)
    for path, mount in shared + local:
        parts = mount.split("/")[1:]
        bad = mount != "/" and (any(p in ("", ".", "..") for p in parts))
        if bad:
            yield error(
                path,
                f"mount point {mount!r} is not a plain absolute path; write it as "
                f"{normal_path(mount)!r} (no '//', '.', '..' or trailing '/')",
            )


# why: two file systems on one mount point hide each other; nested mounts depend on mount
# order at boot (ParallelCluster refuses both).
@rule
def mount_overlap(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    shared, local = mount_points(spec, s3=False)
    pairs: list[tuple[tuple[str, str], tuple[str, str]]] = []
    for i, first in enumerate(shared):
        pairs += [(first, second) for second in shared[i + 1 :]]
        pairs += [(first, second) for second in local]
    for (path_a, mount_a), (path_b, mount_b) in pairs:
        a, b = normal_path(mount_a), normal_path(mount_b)
        if a == "/" or b == "/":
            continue  # mount_reserved reports it
        if a == b:
            yield error(path_b, f"mount point {mount_b!r} is already used by {path_a}")
        elif inside(b, a):
            yield error(path_b, f"mount point {mount_b!r} is inside {mount_a!r} ({path_a})")
        elif inside(a, b):
            yield error(path_a, f"mount point {mount_a!r} is inside {mount_b!r} ({path_b})")


# why: FSx refuses capacities off its steps; see SSD_STEP etc. above.
@rule
def lustre_capacity_step(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    lustre = spec.storage.lustre
    if lustre is None:
        return
    size = lustre.capacity_gib
    path = "storage.lustre.capacity_gib"
    if lustre.storage_type is HDD:
        step = HDD_STEP.get(resolved_throughput(lustre) or 0)
        if lustre.deployment is P1 and step is not None and size % step:
            yield error(
                path,
                f"capacity_gib {size} is not a multiple of {step} GiB, the step of a "
                f"PERSISTENT_1 HDD file system at {resolved_throughput(lustre)} MB/s/TiB; use "
                f"{round_up(size, step)}",
            )
        return
    if lustre.deployment is S1:
        if size not in (1200, 2400) and size % SCRATCH_1_STEP:
            yield error(
                path,
                f"capacity_gib {size} is not valid for SCRATCH_1 (1200, 2400, or a multiple "
                f"of 3600 GiB); use {round_up(size, SCRATCH_1_STEP)}",
            )
    elif size != 1200 and size % SSD_STEP:
        yield error(
            path,
            f"capacity_gib {size} is not valid for {lustre.deployment.value} SSD (1200, or a "
            f"multiple of 2400 GiB); use {round_up(size, SSD_STEP)}",
        )


# why: FSx refuses other per-unit throughput values, and any value on scratch file systems.
@rule
def lustre_throughput(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    lustre = spec.storage.lustre
    if lustre is None or lustre.throughput_per_tib is None:
        return
    value = lustre.throughput_per_tib
    path = "storage.lustre.throughput_per_tib"
    if lustre.deployment in (S1, S2):
        yield error(
            path,
            f"throughput_per_tib is only for PERSISTENT_1 and PERSISTENT_2; "
            f"{lustre.deployment.value} throughput follows from its capacity (remove it)",
        )
        return
    allowed = THROUGHPUT.get((lustre.deployment, lustre.storage_type))
    if allowed is not None and value not in allowed:
        kind = f"{lustre.deployment.value} {lustre.storage_type.value}"
        yield error(
            path,
            f"throughput_per_tib {value} is not offered for {kind}; choose one of "
            f"{', '.join(str(a) for a in allowed)} MB/s/TiB",
        )


# why: HDD storage exists only for PERSISTENT_1 (ParallelCluster FsxStorageTypeOptionsValidator).
@rule
def lustre_hdd(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    lustre = spec.storage.lustre
    if lustre is not None and lustre.storage_type is HDD and lustre.deployment is not P1:
        yield error(
            "storage.lustre.storage_type",
            f"HDD storage is only offered with PERSISTENT_1 (deployment is "
            f"{lustre.deployment.value}); use SSD or deployment: PERSISTENT_1",
        )


# why: a metadata configuration exists only for PERSISTENT_2 file systems.
@rule
def lustre_metadata_iops_deployment(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    lustre = spec.storage.lustre
    if lustre is not None and lustre.metadata_iops is not None and lustre.deployment is not P2:
        yield error(
            "storage.lustre.metadata_iops",
            f"metadata_iops is only for PERSISTENT_2 (deployment is {lustre.deployment.value}); "
            "remove it or use PERSISTENT_2",
        )


# why: FSx refuses metadata IOPS off its steps (see METADATA_IOPS).
@rule
def lustre_metadata_iops_value(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    lustre = spec.storage.lustre
    if lustre is None or lustre.metadata_iops is None or lustre.deployment is not P2:
        return
    value = lustre.metadata_iops
    if value not in METADATA_IOPS:
        above = next((v for v in METADATA_IOPS if v > value), METADATA_IOPS[-1])
        yield error(
            "storage.lustre.metadata_iops",
            f"metadata_iops {value} is not offered; use 1500, 3000, 6000, 12000 or a multiple "
            f"of 12000 up to 192000 (next: {above})",
        )


# why: AWS refuses an EFA-enabled file system outside the conditions in EFA_CAPACITY_STEP.
@rule
def lustre_efa(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    lustre = spec.storage.lustre
    if lustre is None or lustre.efa is not True:
        return
    reasons = lustre_efa_blockers(lustre, spec.region, catalog.regions.get(spec.region))
    if reasons:
        yield error(
            "storage.lustre.efa",
            f"efa is true but AWS would refuse it: {'; '.join(reasons)}; fix that or set efa: auto",
        )


# why: GPUDirect Storage pools (p5/p6) lose EFA Lustre bandwidth to a capacity that is one
# step off, and efa: auto says nothing about it.
@rule
def lustre_efa_auto(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    lustre = spec.storage.lustre
    if lustre is None or lustre.efa != "auto" or lustre.deployment is not P2:
        return
    info = catalog.regions.get(spec.region)
    if info is None or not info.fsx_lustre_efa:
        return
    gds = [
        pf.pool.name
        for pf in pools_with_facts(spec, catalog)
        if reads_lustre_with_gpudirect_storage(pf.pool.instance_type)
    ]
    reasons = lustre_efa_blockers(lustre, spec.region, info)
    if gds and reasons:
        yield warning(
            "storage.lustre.capacity_gib",
            f"efa: auto leaves this file system without EFA: {'; '.join(reasons)}; pools "
            f"{', '.join(gds)} could read it over EFA (or set efa: false to accept TCP)",
        )


# why: FSx refuses a data repository path with an empty segment or a leading '/', and keys
# outside S3's safe characters need escaping that FSx and S3 treat differently.
@rule
def lustre_s3_prefix(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    lustre = spec.storage.lustre
    if lustre is None or lustre.s3_import_export is None:
        return
    prefix = lustre.s3_import_export
    path = "storage.lustre.s3_import_export"
    segments = prefix.rstrip("/").split("/")
    if not prefix:
        yield error(path, "s3_import_export is empty; give a prefix such as datasets/ or null")
    elif prefix.startswith("/"):
        yield error(
            path,
            f"s3_import_export {prefix!r} starts with '/'; S3 keys have no leading slash "
            f"(write {prefix.lstrip('/')!r})",
        )
    elif any(s in ("", ".", "..") for s in segments):
        yield error(
            path,
            f"s3_import_export {prefix!r} has an empty, '.' or '..' segment; write the prefix "
            "as name/name/",
        )
    elif not S3_SAFE_KEY.match(prefix):
        bad = sorted({c for c in prefix if not S3_SAFE_KEY.match(c)})
        yield error(
            path,
            f"s3_import_export {prefix!r} contains {', '.join(repr(c) for c in bad)}; use "
            "letters, digits and ! - _ . * ' ( ) /",
        )


# why: see NO_DATA_REPOSITORY; the association fails after the file system is created.
@rule
def lustre_s3_deployment(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    lustre = spec.storage.lustre
    if lustre is None or lustre.s3_import_export is None:
        return
    if lustre.deployment in NO_DATA_REPOSITORY:
        yield error(
            "storage.lustre.s3_import_export",
            f"{lustre.deployment.value} file systems take no data repository association; "
            "use SCRATCH_2 or PERSISTENT_2, or remove s3_import_export",
        )


# why: every EFA interface a client adds to LNet is one connection, and FSx allows 1024 per
# EFA-enabled file system (FSx for Lustre User Guide, "Configuring EFA clients"); past that,
# clients cannot all reach it over EFA.
@rule
def lustre_efa_connections(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    lustre = spec.storage.lustre
    if lustre is None or not lustre_efa_enabled(
        lustre, spec.region, catalog.regions.get(spec.region)
    ):
        return
    total = sum(
        pf.pool.max_nodes * lustre_client_efa_interfaces(pf.pool.instance_type, pf.facts, pf.efa)
        for pf in pools_with_facts(spec, catalog)
    )
    if total > LUSTRE_EFA_CONNECTION_LIMIT:
        yield warning(
            "storage.lustre.efa",
            f"at full size the pools open {total} EFA connections to the file system (each "
            f"node one per LNet EFA interface); FSx allows {LUSTRE_EFA_CONNECTION_LIMIT} per "
            "file system, so some nodes would not reach it over EFA; set efa: false to use "
            "TCP for all, or use a second file system",
        )


# Users' home directories are /home/<user> on every node and slurmstack does not move them.
# why: EFS mounted elsewhere leaves every $HOME, and the example jobs' checkpoints under it
# without Lustre (plan.workload.checkpoint_root), on each node's disk, lost with the node.
@rule
def home_mount_not_home(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    home = spec.storage.home
    if home is not None and home.mount != HOME_MOUNT:
        yield error(
            "storage.home.mount",
            f"{home.mount!r}: users' home directories ($HOME) are {HOME_MOUNT}/<user> on every "
            f"node and stay there, so EFS at {home.mount} would leave each $HOME on the node's "
            f"own disk; keep mount: {HOME_MOUNT} (for another shared path, storage.lustre.mount)",
        )
