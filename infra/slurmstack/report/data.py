"""`slurmstack plan`'s mounts: every shared mount (what, where, how the nodes reach it, what it
costs) and an honest estimate of the time to first data, each with its source.

Time to first data is not one number. What is known, and said:
- a file system of yours holds its data already: first data as soon as the boot's mount step
  ends (the stack only looks it up);
- the stack's Lustre appears with the file system (the stack's timeline); each association
  then imports its prefix's metadata (batch_import) before its files are listed, at a rate FSx
  does not publish (it grows with the number of objects), and loads a file's data from S3 on
  its first read (lazy load), at most at the file system's throughput (FSx for Lustre User
  Guide, "Lazy load" and "Importing changes from your data repository");
- Mountpoint lists and reads on demand: the first byte of an object after one S3 request
  (S3 User Guide, "Performance design patterns": 100-200 ms first-byte latency for small
  objects from S3 Standard), a pass over the data at most at the node's network bandwidth
  (Mountpoint's default throughput target is the instance's bandwidth: CONFIGURATION.md).
The per-TiB figures below are lower bounds from those ceilings, not measurements.
"""

from __future__ import annotations

from typing import Any

from slurmstack.contract import MountKind
from slurmstack.plan import ClusterPlan
from slurmstack.report.cost import service_prices

TIB_MB = 1024 * 1024 * 1.048576  # MB (10^6 bytes) in a TiB
LAZY_LOAD = (
    "FSx for Lustre User Guide, 'Lazy load': a file's data is read from S3 on its first access"
)
METADATA = (
    "FSx for Lustre User Guide, 'Linking your file system to an Amazon S3 bucket': "
    "batch_import loads the prefix's metadata when the association is created; its duration "
    "grows with the number of objects (no published rate)"
)
FIRST_BYTE = (
    "Amazon S3 User Guide, 'Performance design patterns': 100-200 ms first-byte latency from "
    "S3 Standard"
)
REACH = {
    MountKind.LUSTRE: "Lustre client, TCP 988 and 1018-1023 (LNet)",
    MountKind.EFS: "NFS 4.1 over TLS (efs-utils), TCP 2049",
    MountKind.OPENZFS: "NFS 4.1, TCP 2049",
}


def _minutes_per_tib(mb_per_s: float) -> float:
    return round(TIB_MB / mb_per_s / 60, 1)


def mounts_section(plan: ClusterPlan) -> dict[str, Any]:
    """Every shared mount and every association, as plan --json's ``mounts``."""
    prices = service_prices()
    get = prices["s3_get_usd_per_1000"]["value"]
    put = prices["s3_put_list_usd_per_1000"]["value"]
    mounts: list[dict[str, Any]] = []
    home = plan.home
    for mount in plan.mounts:
        if mount.kind is MountKind.MOUNTPOINT_S3:
            continue
        if mount.existing:
            mounts.append(
                {
                    "mount": mount.path,
                    "what": f"your {mount.kind.value} file system {mount.file_system_id}"
                    + (f" ({mount.export_path})" if mount.export_path else ""),
                    "nodes": "every node",
                    "reached_by": REACH[mount.kind] + "; groups checked at deploy time",
                    "cost": "billed where it lives already; nothing added by the stack",
                    "first_data": "at boot, once mounted: it holds the data already",
                    "sources": [],
                }
            )
        elif mount.kind is MountKind.EFS and home is not None and mount.path == home.path:
            mounts.append(
                {
                    "mount": mount.path,
                    "what": "the stack's EFS /home",
                    "nodes": "every node",
                    "reached_by": REACH[MountKind.EFS],
                    "cost": "storage and elastic throughput (the cost section)",
                    "first_data": "empty until users write",
                    "sources": [],
                }
            )
    lustre = plan.lustre
    if lustre is not None:
        throughput = lustre.per_unit_storage_throughput
        mb_s = round(lustre.spec.capacity_gib / 1024 * throughput) if throughput else None
        for association in plan.associations:
            bucket = association.bucket or "<cluster bucket>"
            where = f"{lustre.spec.mount.rstrip('/')}{association.file_system_path}"
            pace = (
                f"; a first pass reads from S3 at most at {mb_s:,} MB/s: "
                f">= {_minutes_per_tib(mb_s)} min per TiB"
                if mb_s
                else ""
            )
            mounts.append(
                {
                    "mount": where,
                    "what": f"s3://{bucket}/{association.prefix} through a data repository "
                    "association of the stack's Lustre",
                    "nodes": "every node (part of the Lustre mount)",
                    "reached_by": "FSx's own service-linked role; the nodes read Lustre",
                    "import": list(association.import_events),
                    "export": list(association.export_events),
                    "cost": f"S3 requests by FSx (GET ${get}, PUT/LIST ${put} per 1,000) and "
                    "the Lustre capacity the imported data fills",
                    "first_data": (
                        "metadata: after the batch import at creation"
                        if association.batch_import
                        else "metadata: on access or an import task (no batch import)"
                    )
                    + f"; data: on first read (lazy load){pace}",
                    "sources": [METADATA, LAZY_LOAD],
                }
            )
    gbps = min((p.facts.network_gbps for p in plan.pools), default=None)
    for s3 in plan.s3_mounts:
        bucket = s3.bucket or "<cluster bucket>"
        pace = (
            f"; a pass over the data at most at {gbps:g} Gbit/s per node (the slowest pool's "
            f"bandwidth): >= {_minutes_per_tib(gbps * 125):g} min per TiB"
            if gbps
            else ""
        )
        inter_region = prices["s3_inter_region_usd_per_gb"]["value"]
        mounts.append(
            {
                "mount": s3.mount,
                "what": f"s3://{bucket}/{s3.prefix} through Mountpoint for Amazon S3"
                + (" (read-only)" if s3.read_only else " (writes new objects)"),
                "nodes": "every node"
                + ("; cached on the NVMe scratch where a pool has one" if s3.cache else ""),
                "reached_by": "HTTPS to S3 (the VPC's gateway endpoint when the stack made the "
                "VPC); the instance role's credentials, held by root's mount-s3",
                "cost": f"S3 requests (GET ${get}, PUT/LIST ${put} per 1,000); "
                + (
                    f"data between Regions ${inter_region}/GB"
                    if s3.region != plan.region
                    else "no transfer charge in-Region"
                ),
                "first_data": f"at boot: one S3 request away (first byte 100-200 ms){pace}",
                "sources": [FIRST_BYTE, "Mountpoint CONFIGURATION.md at the pinned release"],
            }
        )
    return {"mounts": mounts}
