"""FSx for Lustre as AWS accepts it: capacity steps, throughput tiers, EFA conditions.

Shared by the checks (which refuse what AWS would refuse) and the plan (which resolves
defaults and ``efa: auto`` by the same rules), so the two can never disagree.
"""

from __future__ import annotations

from slurmstack.catalog import InstanceFacts, RegionInfo
from slurmstack.rules.efa import efa_device_count, efa_interfaces
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
# Guide, "Working with EFA-enabled file systems", prerequisites "To access your file system
# using GPUDirect Storage (GDS)"): P5, P5e, P5en and P6-B200 (a later revision of "Configuring
# EFA clients" adds P6e-GB200). GDS is optional: it needs the nvidia-fs driver (2.24.2 or
# later) on top of the EFA client setup below; basic EFA access does not.
GPUDIRECT_STORAGE_FAMILIES = frozenset({"p5", "p5e", "p5en", "p6-b200"})


def lustre_efa_enabled(lustre: LustreSpec, region: str, info: RegionInfo | None) -> bool:
    """Whether the file system is created EFA-enabled: ``efa: auto`` means exactly when AWS
    allows it (no blockers), so auto never asks AWS for something it refuses."""
    if lustre.efa == "auto":
        return not lustre_efa_blockers(lustre, region, info)
    return bool(lustre.efa)


def reads_lustre_with_gpudirect_storage(instance_type: str) -> bool:
    return instance_type.split(".", 1)[0] in GPUDIRECT_STORAGE_FAMILIES


# Which clients reach an EFA-enabled file system over EFA. FSx for Lustre User Guide,
# "Working with EFA-enabled file systems" (prerequisites "To access your file system using
# Elastic Fabric Adapter") and "Configuring EFA clients":
#   https://docs.aws.amazon.com/fsx/latest/LustreGuide/efa-file-systems.html
#   https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html
# "Use Nitro v4 (or higher) EC2 instances that support EFA, excluding the trn2 instance
# family", running AL2023, RHEL 9.5+ or Ubuntu 22.04+ with kernel 6.8+ (our images: Ubuntu
# 24.04). Every other client still mounts the same file system over TCP: "EFA-enabled file
# systems can communicate with client instances using ENA, ENA Express, and EFA".
EFA_LUSTRE_CLIENT_MIN_NITRO = 4
EFA_LUSTRE_CLIENT_EXCLUDED_FAMILIES = frozenset({"trn2"})

# The Nitro version of each family we know (EC2 Instance Types guide, "Instance family
# summary" tables, Hypervisor column; https://docs.aws.amazon.com/ec2/latest/instancetypes/).
# A family missing here is treated as unknown and its pools mount over TCP.
NITRO_VERSION = {
    # accelerated computing (ac.html)
    "p4d": 3,
    "p4de": 3,
    "p5": 4,
    "p5e": 4,
    "p5en": 5,
    "p6-b200": 6,
    "p6-b300": 6,
    "p6e-gb200": 5,
    "g5": 3,
    "g6": 4,
    "g6e": 4,
    "trn1": 4,
    "trn1n": 4,
    "trn2": 5,
    "inf2": 4,
    # high performance computing (hpc.html)
    "hpc6a": 4,
    "hpc6id": 4,
    "hpc7a": 4,
    "hpc7g": 5,
    # compute optimized (co.html)
    "c5n": 3,
    "c6i": 4,
    "c6in": 4,
    "c7i": 4,
    "c7a": 4,
    "c7gn": 5,
    # general purpose (gp.html)
    "m6i": 4,
    "m7i": 4,
    "m7a": 4,
}

# EFA interfaces a client adds to LNet by default (FSx for Lustre User Guide, "Configuring
# EFA clients", Step "EFA interfaces"): 8 on p5/p5e/p5en/p6-b200/p6e-gb200, 16 on p6-b300,
# else 2 on instances with several network cards and 1 on the others. Each configured
# interface counts against the file system's limit of 1024 EFA connections.
LUSTRE_EFA_INTERFACES = {
    "p6-b300.48xlarge": 16,
    "p6e-gb200.36xlarge": 8,
    "p6-b200.48xlarge": 8,
    "p5en.48xlarge": 8,
    "p5e.48xlarge": 8,
    "p5.48xlarge": 8,
}
LUSTRE_EFA_CONNECTION_LIMIT = 1024


def is_efa_lustre_client(instance_type: str) -> bool:
    """Whether ``instance_type`` can reach an EFA-enabled file system over EFA (given that
    the instance has EFA on); False sends it over TCP."""
    family = instance_type.split(".", 1)[0]
    if family in EFA_LUSTRE_CLIENT_EXCLUDED_FAMILIES:
        return False
    return NITRO_VERSION.get(family, 0) >= EFA_LUSTRE_CLIENT_MIN_NITRO


def lustre_efa_interface_count(instance_type: str, network_cards: int, efa_devices: int) -> int:
    """EFA interfaces an EFA Lustre client adds to LNet: AWS's default for its type, never
    more than the EFA devices the node has."""
    default = LUSTRE_EFA_INTERFACES.get(instance_type, 2 if network_cards > 1 else 1)
    return min(default, efa_devices)


def lustre_client_efa_interfaces(instance_type: str, facts: InstanceFacts, efa: bool) -> int:
    """EFA interfaces a node adds to LNet for an EFA-enabled file system, each one connection
    against LUSTRE_EFA_CONNECTION_LIMIT; 0 when it reaches the file system over TCP (no EFA,
    or a type that cannot be an EFA Lustre client). The plan configures the nodes with it and
    the checks count the connections with it."""
    if not efa or not is_efa_lustre_client(instance_type):
        return 0
    devices = efa_device_count(efa_interfaces(facts, efa))
    return lustre_efa_interface_count(instance_type, facts.network_cards, devices)
