"""FSx for Lustre as AWS accepts it: capacity steps, throughput tiers, EFA conditions.

Shared by the checks (which refuse what AWS would refuse) and the plan (which resolves
defaults and ``efa: auto`` by the same rules), so the two can never disagree.
"""

from __future__ import annotations

from slurmstack.catalog import RegionInfo
from slurmstack.spec import LustreDeployment, LustreSpec, LustreStorageType

P1, P2 = LustreDeployment.PERSISTENT_1, LustreDeployment.PERSISTENT_2
HDD = LustreStorageType.HDD

# CreateFileSystem StorageCapacity (FSx API Reference): SCRATCH_2, PERSISTENT_2 and
# PERSISTENT_1 SSD take 1200 GiB, 2400 GiB and increments of 2400 GiB; SCRATCH_1 takes 1200,
# 2400 and increments of 3600; PERSISTENT_1 HDD takes increments of 6000 GiB at 12 MB/s/TiB
# and of 1800 GiB at 40 MB/s/TiB.
SSD_STEP = 2400
SCRATCH_1_STEP = 3600
HDD_STEP = {12: 6000, 40: 1800}
HDD_DEFAULT_THROUGHPUT = 40  # what the plan picks for PERSISTENT_1 HDD when none is given

# CreateFileSystemLustreConfiguration PerUnitStorageThroughput (FSx API Reference): only for
# PERSISTENT_1 and PERSISTENT_2; PERSISTENT_1 SSD 50, 100, 200; PERSISTENT_1 HDD 12, 40;
# PERSISTENT_2 SSD 125, 250, 500, 1000 MB/s/TiB.
THROUGHPUT = {
    (P1, LustreStorageType.SSD): (50, 100, 200),
    (P1, HDD): (12, 40),
    (P2, LustreStorageType.SSD): (125, 250, 500, 1000),
}
P2_DEFAULT_THROUGHPUT = 250  # what the plan picks for PERSISTENT_2 when none is given

# CreateFileSystemLustreMetadataConfiguration Iops (FSx API Reference): for SSD file systems
# 1500, 3000, 6000, 12000 and multiples of 12000 up to 192000; PERSISTENT_2 only.
METADATA_IOPS = (1500, 3000, 6000, 12000, *range(24000, 192001, 12000))

# EFA-enabled file systems (FSx for Lustre User Guide, "Working with EFA-enabled file systems"
# and the Pulumi/Terraform efaEnabled docs): PERSISTENT_2 with a metadata configuration, in
# Regions that offer it (catalog regions[...].fsx_lustre_efa). Their storage grows in whole
# EFA file servers (User Guide, "Increasing storage capacity"): multiples of 38400 GiB at
# 125 MB/s/TiB, 19200 at 250, 9600 at 500 and 4800 at 1000.
EFA_CAPACITY_STEP = {125: 38400, 250: 19200, 500: 9600, 1000: 4800}


def resolved_throughput(lustre: LustreSpec) -> int | None:
    """Per-unit throughput as the plan resolves it (None for scratch)."""
    if lustre.throughput_per_tib is not None:
        return lustre.throughput_per_tib
    if lustre.deployment is P2:
        return P2_DEFAULT_THROUGHPUT
    if lustre.deployment is P1:
        return HDD_DEFAULT_THROUGHPUT if lustre.storage_type is HDD else 200
    return None


def round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def lustre_efa_blockers(lustre: LustreSpec, region: str, info: RegionInfo | None) -> list[str]:
    """Why AWS would refuse an EFA-enabled file system for ``lustre`` ([] when it allows it).

    The plan should turn ``efa: auto`` on only when this is empty."""
    reasons: list[str] = []
    if lustre.deployment is not P2:
        reasons.append(f"EFA needs PERSISTENT_2 (deployment is {lustre.deployment.value})")
    if info is None or not info.fsx_lustre_efa:
        reasons.append(f"FSx for Lustre offers no EFA-enabled file systems in {region}")
    throughput = resolved_throughput(lustre)
    step = EFA_CAPACITY_STEP.get(throughput or 0)
    if lustre.deployment is P2 and step is not None and lustre.capacity_gib % step:
        reasons.append(
            f"an EFA-enabled file system at {throughput} MB/s/TiB grows in {step} GiB units "
            f"(capacity_gib {lustre.capacity_gib}; use {round_up(lustre.capacity_gib, step)})"
        )
    return reasons


# Clients that read an EFA-enabled file system with GPUDirect Storage (FSx for Lustre User
# Guide, "Working with EFA-enabled file systems"): P5, P5e, P5en and P6-B200. Other EFA
# clients must be Nitro v4 or later (not p4d/p4de, not trn2); the rest mount over TCP.
GPUDIRECT_STORAGE_FAMILIES = frozenset({"p5", "p5e", "p5en", "p6-b200"})


def reads_lustre_with_gpudirect_storage(instance_type: str) -> bool:
    return instance_type.split(".", 1)[0] in GPUDIRECT_STORAGE_FAMILIES
