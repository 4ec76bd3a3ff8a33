"""The cluster definition: one Pydantic class per concept, the schema is the object.

These models hold structure, types and ranges. Rules that need the instance catalog or
span several fields live in ``slurmstack.checks``. Every field is described; the JSON
Schema (``slurmstack schema``) and docs/reference/configuration.md come from here.
"""

from __future__ import annotations

import enum
from ipaddress import IPv4Network
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StringConstraints,
    WithJsonSchema,
    field_validator,
)

from slurmstack.catalog import InstanceFacts
from slurmstack.contract import DatabaseType, Remedy
from slurmstack.slurm_releases import DEFAULT_VERSION, VERSION_PATTERN
from slurmstack.spec_base import (
    SECRET_ID_PATTERN,
    Model,
    UserName,
    matching,
)
from slurmstack.spec_people import DirectorySpec, GroupSpec, UserSpec

# Cluster and pool names end up in AWS resource names, Slurm partition/nodeset names and
# host names, so they follow the strictest of those: DNS-label characters, lowercase.
NAME_PATTERN = r"^[a-z]([a-z0-9-]*[a-z0-9])?$"
MOUNT_PATTERN = r"^/[A-Za-z0-9._/-]*$"
AMI_PATTERN = r"^ami-[0-9a-f]{8,17}$"

ClusterName = Annotated[
    str,
    StringConstraints(pattern=NAME_PATTERN, min_length=1, max_length=24),
]
PoolName = Annotated[
    str,
    StringConstraints(pattern=NAME_PATTERN, min_length=1, max_length=20),
]
MountPath = Annotated[str, StringConstraints(pattern=MOUNT_PATTERN, max_length=200)]


def _cidr_text(value: object) -> object:
    """CIDRs are written as text: pydantic alone would read the number 5 (or true) as
    0.0.0.5/32 and let a typo through as a host route."""
    if value is None or isinstance(value, str | IPv4Network):
        return value
    raise ValueError(f"expected a CIDR written as text, such as 10.42.0.0/16 (got {value!r})")


Cidr = Annotated[IPv4Network, BeforeValidator(_cidr_text)]
AmiId = Annotated[str, StringConstraints(pattern=AMI_PATTERN)]
# An IAM role or user by ARN (IAM's own wildcards * and ? allowed in the name, as aws:PrincipalArn
# takes them): e.g. arn:aws:iam::123456789012:role/ci-deployer.
PRINCIPAL_ARN_PATTERN = r"^arn:aws(-cn|-us-gov)?:iam::[0-9]{12}:(role|user)/[A-Za-z0-9_+=,.@/*?-]+$"
PrincipalArn = Annotated[str, StringConstraints(pattern=PRINCIPAL_ARN_PATTERN, max_length=600)]
Auto = Literal["auto"]

# A placement group's name: up to 255 ASCII characters (EC2 API Reference,
# CreatePlacementGroup); slurmstack takes the letters, digits and punctuation names use.
PLACEMENT_GROUP_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,254}$"
_YES_NO_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "y", "n"})


def _not_a_yes_no_word(value: str) -> str:
    """A quoted "true" would otherwise name a placement group called true."""
    if value.lower() in _YES_NO_WORDS:
        raise ValueError(
            f"{value!r} is text, not a boolean: write true or false without quotes, or give "
            "the name of an existing placement group"
        )
    return value


PlacementGroupName = Annotated[
    str,
    StringConstraints(pattern=PLACEMENT_GROUP_PATTERN),
    AfterValidator(_not_a_yes_no_word),
]


class NetworkSpec(Model):
    """Where the cluster lives: a new VPC, or an existing VPC and its subnets."""

    vpc_cidr: Cidr | None = Field(
        default=IPv4Network("10.42.0.0/16"),
        description="CIDR of a new VPC (a /16 to /24). Ignored when vpc_id is given.",
    )
    compute_subnet_prefix: int | None = Field(
        default=None,
        ge=16,
        le=28,
        description=(
            "Prefix length of the private compute subnet, carved from the start of vpc_cidr. "
            "Default: one bit longer than the VPC's (its first half), at most /28; it must "
            "leave the end of the VPC to the public subnet. Each node takes one address from "
            "it (its efa-only interfaces take none), as do the head node, EFS and Lustre."
        ),
    )
    vpc_id: str | None = Field(
        default=None,
        pattern=r"^vpc-[0-9a-f]{8,17}$",
        description="Existing VPC to use instead of creating one.",
    )
    compute_subnet_id: str | None = Field(
        default=None,
        pattern=r"^subnet-[0-9a-f]{8,17}$",
        description=(
            "Existing private subnet (in availability_zone) for head node, workers, storage."
        ),
    )
    compute_subnet_cidr: Cidr | None = Field(
        default=None,
        description=(
            "CIDR of compute_subnet_id, so slurmstack can check it has room for every node."
        ),
    )
    public_subnet_id: str | None = Field(
        default=None,
        pattern=r"^subnet-[0-9a-f]{8,17}$",
        description="Existing public subnet (optional; only needed when ssh_cidrs is not empty).",
    )
    ssh_cidrs: list[Cidr] = Field(
        default_factory=list,
        description=(
            "CIDRs allowed to reach the head node on port 22. Empty (the default) means no "
            "SSH ingress at all: use SSM Session Manager."
        ),
    )


# gp3 limits, Amazon EC2 API Reference, CreateVolume
# (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVolume.html, as current
# in 2026 and as botocore's EC2 model states it): Size 1 - 65,536 GiB, Iops 3,000 - 80,000,
# Throughput 125 - 2,000 MiB/s (raised from 16 TiB / 16,000 / 1,000 in 2025). The ratios
# between them (500 IOPS per GiB, 0.25 MiB/s per IOPS) are checked in checks.instances.
GP3_MAX_GIB = 65536
GP3_MIN_IOPS, GP3_MAX_IOPS = 3000, 80000
GP3_MIN_MIBPS, GP3_MAX_MIBPS = 125, 2000


class RootVolume(Model):
    """Root EBS volume of an instance (always gp3 and encrypted)."""

    size_gib: int = Field(
        default=200, ge=30, le=GP3_MAX_GIB, description="Root volume size in GiB."
    )
    iops: int = Field(default=3000, ge=GP3_MIN_IOPS, le=GP3_MAX_IOPS, description="gp3 IOPS.")
    throughput_mibps: int = Field(
        default=250, ge=GP3_MIN_MIBPS, le=GP3_MAX_MIBPS, description="gp3 throughput, MiB/s."
    )


class HeadNodeSpec(Model):
    """The Slurm controller: slurmctld, the state volume and the login shell."""

    instance_type: str = Field(description="EC2 instance type of the head node, e.g. m7i.4xlarge.")
    ami: AmiId | None = Field(
        default=None,
        description=(
            "Your own image for the head node (it must meet the image contract, checked at "
            "boot; see docs/node-images.md). Default: image.ami, else the image slurmstack "
            "bakes on Ubuntu 24.04."
        ),
    )
    root_volume: RootVolume = Field(default_factory=RootVolume, description="Root volume.")
    state_volume_gib: int = Field(
        default=100,
        ge=10,
        le=GP3_MAX_GIB,
        description=(
            "Separate encrypted gp3 volume for Slurm state (survives head node replacement)."
        ),
    )
    instance_facts: InstanceFacts | None = Field(
        default=None,
        description="Facts for an instance type the catalog lacks (see the catalog record).",
    )
    auto_recovery: bool = Field(
        default=True,
        description=(
            "Recover the head node without a person (docs/head-failure.md): EC2 moves it to "
            "healthy hardware when its host fails (system status check; same instance, address "
            "and volumes) and reboots it when its operating system stops answering (instance "
            "status check); both alarms tell the alert topic. false: no alarms, and EC2's "
            "simplified automatic recovery is turned off too."
        ),
    )
    backup: bool = Field(
        default=False,
        description=(
            "A second controller (docs/head-failure.md): an instance like the head in the "
            "compute subnet runs a standby slurmctld (and slurmdbd) that takes over when the "
            "head's slurmctld stops answering for SlurmctldTimeout, and hands control back when "
            "it returns. Slurm's state moves from the head's EBS volume to an EFS file system "
            "both controllers mount. Needs slurm.accounting.database.type rds or external when "
            "accounting is on (the local database lives on the head)."
        ),
    )


# A pool's nodes, always-on or at most (5,000 p5.48xlarge are 40,000 GPUs, far beyond any
# one Availability Zone's capacity), and an elastic node's idle time before it stops (a week).
POOL_NODES_MAX = 5000
SCALE_DOWN_IDLE_MINUTES_MAX = 7 * 24 * 60


class CapacityType(enum.StrEnum):
    ON_DEMAND = "on_demand"
    SPOT = "spot"
    CAPACITY_BLOCK = "capacity_block"
    CAPACITY_RESERVATION = "capacity_reservation"


class CapacitySpec(Model):
    """How a pool's instances are bought."""

    type: CapacityType = Field(
        default=CapacityType.ON_DEMAND,
        description=(
            "on_demand; spot; capacity_block (EC2 Capacity Blocks for ML, needs reservation_id); "
            "capacity_reservation (an On-Demand Capacity Reservation, needs reservation_id)."
        ),
    )
    reservation_id: str | None = Field(
        default=None,
        pattern=r"^cr-[0-9a-f]{8,17}$",
        description="Capacity reservation id (cr-...) for capacity_block and capacity_reservation.",
    )
    max_spot_price: float | None = Field(
        default=None, gt=0, description="Spot only: the most to pay per instance-hour (USD)."
    )


class TopologyChoice(enum.StrEnum):
    """pools[].topology (slurmstack.rules.topology)."""

    AUTO = "auto"  # block for UltraServer types, tree for the others EC2 covers, else none
    TREE = "tree"
    BLOCK = "block"
    OFF = "off"


class PoolSpec(Model):
    """A worker pool: one instance type, one Slurm partition, one Auto Scaling group of
    always-on nodes (count) and, up to max_count, elastic nodes started for pending jobs."""

    name: PoolName = Field(description="Pool name; also its Slurm partition and node feature.")
    instance_type: str = Field(description="EC2 instance type, e.g. p5.48xlarge.")
    count: int = Field(
        ge=0,
        le=POOL_NODES_MAX,
        description="Number of nodes the pool keeps running (its Auto Scaling group; may be 0).",
    )
    max_count: int | None = Field(
        default=None,
        ge=0,
        le=POOL_NODES_MAX,
        description=(
            "The most nodes the pool may have (at least count). Default: count, i.e. not "
            "elastic. The max_count - count elastic nodes are started for pending jobs by "
            "Slurm's power saving and stopped again when idle."
        ),
    )
    scale_down_idle_minutes: int = Field(
        default=10,
        ge=1,
        le=SCALE_DOWN_IDLE_MINUTES_MAX,
        description=(
            "How long an elastic node may stay idle before it is stopped (Slurm's SuspendTime "
            "for the pool's elastic nodes)."
        ),
    )
    capacity: CapacitySpec = Field(default_factory=CapacitySpec, description="Purchase option.")
    efa: bool | Auto = Field(
        default="auto",
        description="EFA interfaces: auto (on wherever the type supports EFA), true, or false.",
    )
    topology: TopologyChoice = Field(
        default=TopologyChoice.AUTO,
        description=(
            "Network topology Slurm schedules by, from EC2's instance topology: auto (block for "
            "UltraServer types, tree for the other types EC2 reports a topology for, none "
            "otherwise), tree, block (UltraServer types only), or off."
        ),
    )
    placement_group: bool | Auto | PlacementGroupName = Field(
        default="auto",
        description=(
            "Cluster placement group: auto (a new one when EFA is on and capacity is on_demand "
            "or spot; none for a capacity block, whose instances are already co-located, or a "
            "capacity reservation, which cannot move into a group made after it), true (a new "
            "one), false, or the name of an existing group to launch into (the one a capacity "
            "reservation was created in)."
        ),
    )
    local_scratch: MountPath | None = Field(
        default=None,
        description="Mount point of a RAID0 array over the instance NVMe disks, e.g. /scratch.",
    )
    ami: AmiId | None = Field(
        default=None,
        description=(
            "Your own image for this pool's nodes (it must meet the image contract, checked at "
            "boot; a node that fails it is replaced). Default: image.ami, else the image "
            "slurmstack bakes for the pool's kind (NVIDIA, Neuron or CPU)."
        ),
    )
    root_volume: RootVolume = Field(default_factory=RootVolume, description="Root volume.")
    slurm_version: Annotated[str, StringConstraints(pattern=VERSION_PATTERN)] | None = Field(
        default=None,
        description=(
            "The Slurm release this pool's image builds, when it lags the head's during a "
            "staged upgrade (YY.MM.P, pinned like slurm.version): never newer than "
            "slurm.version (slurmd must not run ahead of slurmctld), never older than "
            "slurmctld accepts. Default: slurm.version."
        ),
    )
    instance_facts: InstanceFacts | None = Field(
        default=None,
        description="Facts for an instance type the catalog lacks (see the catalog record).",
    )

    @property
    def max_nodes(self) -> int:
        """The most nodes the pool may have: max_count, or count when it is not set. A
        max_count below count (refused by its own check) counts as count, so no other
        finding speaks of fewer nodes than the definition keeps running."""
        return max(self.count, self.max_count if self.max_count is not None else self.count)

    @property
    def elastic_nodes(self) -> int:
        """Nodes started on demand: max_count - count (0 when not elastic)."""
        return self.max_nodes - self.count


LOGIN_NODES_MAX = 100


class LoginPoolSpec(Model):
    """A pool of login nodes: where people log in, build and submit jobs. An Auto Scaling
    group of one instance type running the Slurm clients (configless, through sackd), the
    shared file systems, the same image, health checks and metadata firewall as every node,
    and no slurmctld, slurmd or cluster secret beyond the munge key clients need."""

    name: PoolName = Field(description="Login pool name (its Auto Scaling group's).")
    instance_type: str = Field(description="EC2 instance type, e.g. m7i.2xlarge.")
    count: int = Field(
        default=1, ge=1, le=LOGIN_NODES_MAX, description="Login nodes the group keeps running."
    )
    ssh_cidrs: list[Cidr] = Field(
        default_factory=list,
        description=(
            "CIDRs allowed to reach the login nodes on port 22. Empty (the default): SSH only "
            "through Session Manager (AWS-StartSSHSession), no inbound port."
        ),
    )
    load_balancer: bool = Field(
        default=False,
        description=(
            "A Network Load Balancer in front of the pool's port 22 (with ssh_cidrs): one "
            "address for every login node; its nodes share one host key, so a replaced node "
            "is the host users already trust."
        ),
    )
    ami: AmiId | None = Field(
        default=None,
        description="Your own image for the login nodes. Default: the head node's image.",
    )
    root_volume: RootVolume = Field(default_factory=RootVolume, description="Root volume.")
    instance_facts: InstanceFacts | None = Field(
        default=None,
        description="Facts for an instance type the catalog lacks (see the catalog record).",
    )


class LustreDeployment(enum.StrEnum):
    SCRATCH_1 = "SCRATCH_1"
    SCRATCH_2 = "SCRATCH_2"
    PERSISTENT_1 = "PERSISTENT_1"
    PERSISTENT_2 = "PERSISTENT_2"


class LustreStorageType(enum.StrEnum):
    SSD = "SSD"
    HDD = "HDD"


class RepositoryEvent(enum.StrEnum):
    """What a data repository association imports or exports automatically."""

    NEW = "NEW"
    CHANGED = "CHANGED"
    DELETED = "DELETED"


ALL_EVENTS = [RepositoryEvent.NEW, RepositoryEvent.CHANGED, RepositoryEvent.DELETED]
# S3 bucket naming rules (Amazon S3 User Guide, "General purpose bucket naming rules"): 3-63
# lowercase letters, digits, '.' and '-', beginning and ending with a letter or digit.
BUCKET_NAME_PATTERN = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
REGION_PATTERN = r"^[a-z]{2}(-[a-z]+)+-[0-9]$"
BucketName = Annotated[
    str,
    matching(
        BUCKET_NAME_PATTERN,
        "an S3 bucket name: 3-63 lowercase letters, digits, '.' and '-'",
    ),
    WithJsonSchema({"type": "string", "pattern": BUCKET_NAME_PATTERN}),
]
RegionName = Annotated[str, StringConstraints(pattern=REGION_PATTERN)]


class AssociationSpec(Model):
    """A data repository association: one directory of the Lustre file system linked to an S3
    bucket or prefix, importing on access and exporting on change as its policies say."""

    path: MountPath = Field(
        description=(
            "The directory in the file system (relative to its mount), e.g. /datasets; each "
            "association has its own, and no two nest."
        )
    )
    bucket: BucketName | None = Field(
        default=None, description="The S3 bucket; null: the cluster bucket."
    )
    prefix: str = Field(
        default="",
        max_length=900,
        description="Prefix in the bucket, ending in '/', e.g. imagenet/; empty: the whole bucket.",
    )
    bucket_region: RegionName | None = Field(
        default=None,
        description=(
            "The bucket's Region when it is not the cluster's (checked at deploy time too); "
            "FSx imports automatically only from buckets in its own Region."
        ),
    )
    import_events: list[RepositoryEvent] = Field(
        default_factory=lambda: list(ALL_EVENTS),
        description="S3 changes imported automatically (empty: none; metadata loads on access).",
    )
    export_events: list[RepositoryEvent] = Field(
        default_factory=lambda: list(ALL_EVENTS),
        description="File system changes exported to S3 automatically (empty: read-only use).",
    )
    batch_import: bool = Field(
        default=True,
        description="Import the prefix's metadata when the association is created.",
    )


class LustreSpec(Model):
    """FSx for Lustre: the shared, hot tier mounted on every node."""

    capacity_gib: int = Field(ge=1200, le=2_000_000, description="Storage capacity in GiB.")
    deployment: LustreDeployment = Field(
        default=LustreDeployment.PERSISTENT_2, description="FSx for Lustre deployment type."
    )
    storage_type: LustreStorageType = Field(
        default=LustreStorageType.SSD, description="SSD, or HDD (PERSISTENT_1 only)."
    )
    throughput_per_tib: int | None = Field(
        default=None,
        description="Per-unit storage throughput, MB/s/TiB (persistent types only).",
    )
    mount: MountPath = Field(default="/fsx", description="Mount point on every node.")
    s3_import_export: str | None = Field(
        default=None,
        max_length=900,
        description=(
            "Prefix in the cluster bucket linked by a data repository association "
            "(import on access, export on change). None: no association."
        ),
    )
    compression: Literal["LZ4", "NONE"] = Field(default="LZ4", description="Data compression.")
    efa: bool | Auto = Field(
        default="auto",
        description="EFA-enabled file system: auto (when AWS allows it for this configuration).",
    )
    metadata_iops: int | None = Field(
        default=None,
        ge=1500,
        le=192000,
        description="PERSISTENT_2 only: provisioned metadata IOPS (default: automatic mode).",
    )
    associations: list[AssociationSpec] = Field(
        default_factory=list,
        max_length=32,
        description=(
            "Data repository associations: directories of the file system linked to S3 "
            "buckets or prefixes (the cluster bucket's or others'), besides s3_import_export. "
            "FSx allows 8 per file system."
        ),
    )


class ExistingFileSystemType(enum.StrEnum):
    LUSTRE = "lustre"
    EFS = "efs"
    OPENZFS = "openzfs"


FILE_SYSTEM_ID_PATTERN = r"^fs-[0-9a-f]{8,17}$"
SECURITY_GROUP_ID_PATTERN = r"^sg-[0-9a-f]{8,17}$"
FileSystemId = Annotated[str, StringConstraints(pattern=FILE_SYSTEM_ID_PATTERN)]
SecurityGroupId = Annotated[str, StringConstraints(pattern=SECURITY_GROUP_ID_PATTERN)]


class ExistingFileSystemSpec(Model):
    """A file system you already have, mounted on every node. The stack looks it up at deploy
    time (its DNS and mount names, the security groups that guard it) and never creates,
    changes or deletes it."""

    type: ExistingFileSystemType = Field(
        description="lustre (FSx for Lustre), efs (Amazon EFS) or openzfs (FSx for OpenZFS, NFS)."
    )
    file_system_id: FileSystemId = Field(description="The file system's id, e.g. fs-0123abcd.")
    mount: MountPath = Field(description="Mount point on every node, e.g. /datasets.")
    export_path: MountPath | None = Field(
        default=None,
        description="openzfs: the volume's path to mount (default /fsx, the root volume).",
    )
    client_security_group_id: SecurityGroupId | None = Field(
        default=None,
        description=(
            "A security group of yours that the file system admits: the stack adds it to every "
            "node (otherwise the file system's groups must admit the cluster's subnet)."
        ),
    )


class S3MountSpec(Model):
    """A bucket or prefix mounted with Mountpoint for Amazon S3 (mount-s3, baked into the
    image) on every node: datasets read-only, checkpoints written as new objects."""

    mount: MountPath = Field(description="Mount point on every node, e.g. /datasets/s3.")
    bucket: BucketName | None = Field(
        default=None, description="The S3 bucket; null: the cluster bucket."
    )
    prefix: str = Field(
        default="",
        max_length=900,
        description="Prefix in the bucket, ending in '/'; only it is visible (and reachable).",
    )
    bucket_region: RegionName | None = Field(
        default=None, description="The bucket's Region when it is not the cluster's."
    )
    read_only: bool = Field(
        default=True, description="Refuse every write (datasets). false: new files become objects."
    )
    allow_delete: bool = Field(default=False, description="Writable mounts: let rm delete objects.")
    allow_overwrite: bool = Field(
        default=False, description="Writable mounts: let a file be replaced (opened with O_TRUNC)."
    )
    cache: bool | Auto = Field(
        default="auto",
        description=(
            "Cache object data on the node's NVMe scratch (auto: where the pool has "
            "local_scratch). The head node never caches."
        ),
    )
    cache_max_gib: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Largest size of the cache (default: Mountpoint's, 5% of the disk free).",
    )
    metadata_ttl_seconds: int | None = Field(
        default=None,
        ge=0,
        le=31_536_000,
        description="How long listings and attributes are trusted (default: Mountpoint's).",
    )
    allow_other: bool = Field(
        default=True,
        description=(
            "Let job users (not only root, who runs Mountpoint) read the mount. false: root only."
        ),
    )


class HomeSpec(Model):
    """Shared /home."""

    type: Literal["efs", "openzfs"] = Field(
        default="efs",
        description=(
            "efs: Amazon EFS, elastic throughput (the stack makes one unless file_system_id "
            "names yours). openzfs: an FSx for OpenZFS file system of yours (file_system_id)."
        ),
    )
    mount: MountPath = Field(
        default="/home",
        description=(
            "Mount point on every node: /home, where users' home directories are (another "
            "path is refused: $HOME would stay on each node's disk)."
        ),
    )
    file_system_id: FileSystemId | None = Field(
        default=None,
        description="An existing file system to use as /home (looked up, never changed).",
    )
    export_path: MountPath | None = Field(
        default=None, description="openzfs: the volume's path (default /fsx)."
    )
    client_security_group_id: SecurityGroupId | None = Field(
        default=None,
        description="An existing file system's client group (as in storage.existing).",
    )


class BucketSpec(Model):
    """The cluster's S3 bucket: durable datasets and checkpoints."""

    versioning: bool = Field(default=True, description="Keep object versions.")
    noncurrent_version_days: int = Field(
        default=30,
        ge=1,
        le=3650,
        description="Expire non-current object versions (old checkpoints) after this many days.",
    )
    administrators: list[PrincipalArn] = Field(
        default_factory=list,
        max_length=20,
        description=(
            "IAM roles or users (ARNs, * and ? allowed) that may delete object versions, besides "
            "the account root and whoever ran the latest `pulumi up`: e.g. a CI role that "
            "destroys the stack, or your administrators' SSO role "
            "(docs/images.md, 'Permissions an operator may need')."
        ),
    )


class StorageSpec(Model):
    """Storage tiers beyond each node's local NVMe scratch."""

    lustre: LustreSpec | None = Field(default=None, description="FSx for Lustre; none if absent.")
    home: HomeSpec | None = Field(
        default_factory=HomeSpec, description="Shared /home on EFS; null for node-local /home."
    )
    bucket: BucketSpec = Field(default_factory=BucketSpec, description="The cluster bucket.")
    existing: list[ExistingFileSystemSpec] = Field(
        default_factory=list,
        max_length=20,
        description="File systems you already have, mounted on every node (never changed).",
    )
    s3_mounts: list[S3MountSpec] = Field(
        default_factory=list,
        max_length=16,
        description="Buckets or prefixes mounted with Mountpoint for Amazon S3 on every node.",
    )
    protect: bool = Field(
        default=True,
        description=(
            "Protect stateful resources (bucket, file systems, Slurm state volume) from "
            "deletion. Set false for throw-away clusters."
        ),
    )


SettingValue = str | int | float | bool


# --- accounting (slurm.accounting) ----------------------------------------------------------
# Slurm's own object names: sacctmgr folds account and QoS names to lowercase, so the
# definition writes them so; user names are Linux login names (useradd's default pattern).
SLURM_OBJECT_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,62}$"
# A trackable resource as sacctmgr writes it in limits: cpu, mem (MiB), node, billing, or a
# GRES with an optional type (gres/gpu, gres/gpu:h100, gres/neuron).
TRES_PATTERN = r"^(cpu|mem|node|billing|gres/[a-z][a-z0-9_]*(:[a-z0-9][a-z0-9_.-]*)?)$"
DB_IDENTIFIER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,31}$"
SlurmObjectName = Annotated[
    str,
    matching(
        SLURM_OBJECT_PATTERN,
        "a Slurm name: lowercase letters, digits, '_', '.', '-', starting with a letter or "
        "digit, at most 63 characters (sacctmgr folds account and QoS names to lowercase)",
    ),
    WithJsonSchema({"type": "string", "pattern": SLURM_OBJECT_PATTERN}),
]
TresName = Annotated[
    str,
    matching(
        TRES_PATTERN,
        "a TRES name: cpu, mem (MiB), node, billing, gres/gpu or gres/gpu:<type> such as "
        "gres/gpu:h100",
    ),
    WithJsonSchema({"type": "string", "pattern": TRES_PATTERN}),
]
TresLimits = dict[TresName, Annotated[int, Field(ge=0, le=2**31)]]

DESCRIPTION_PATTERN = r"^[^\n\r\"'#]{1,200}$"
Description = Annotated[
    str,
    matching(DESCRIPTION_PATTERN, "one line of up to 200 characters, without quotes or '#'"),
    WithJsonSchema({"type": "string", "pattern": DESCRIPTION_PATTERN}),
]


class AccountingDatabaseSpec(Model):
    """Where slurmdbd keeps the accounting records."""

    type: DatabaseType = Field(
        default=DatabaseType.LOCAL,
        description=(
            "local: MariaDB on the head node, its data on the head's state volume (survives head "
            "replacement); external: a MySQL-compatible server you run (host, password_secret); "
            "rds: an Amazon RDS for MariaDB instance the stack creates."
        ),
    )
    host: str | None = Field(
        default=None,
        max_length=253,
        pattern=r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$",
        description="external only: host name or address of the database server.",
    )
    port: int = Field(default=3306, ge=1, le=65535, description="Port of the database server.")
    name: str = Field(
        default="slurm_acct_db",
        pattern=DB_IDENTIFIER_PATTERN,
        description="Database (schema) slurmdbd uses; slurmdbd creates its tables in it.",
    )
    user: str = Field(
        default="slurm",
        pattern=DB_IDENTIFIER_PATTERN,
        description="Database user slurmdbd connects as.",
    )
    password_secret: str | None = Field(
        default=None,
        pattern=SECRET_ID_PATTERN,
        description=(
            "external only: name or ARN of a Secrets Manager secret whose SecretString is that "
            "user's password (printable ASCII without blanks or quotes). local and rds: the "
            "stack generates the password and keeps it in a secret of its own."
        ),
    )
    instance_class: str = Field(
        default="db.t4g.medium",
        pattern=r"^db\.[a-z0-9]+\.[a-z0-9]+$",
        description="rds only: the DB instance class.",
    )
    storage_gib: int = Field(
        default=20, ge=20, le=65536, description="rds only: allocated storage (gp3), GiB."
    )
    subnet_ids: list[Annotated[str, StringConstraints(pattern=r"^subnet-[0-9a-f]{8,17}$")]] = Field(
        default_factory=list,
        description=(
            "rds only, with network.vpc_id: two or more subnets in different zones for the "
            "DB subnet group (RDS asks for two zones even for one instance). A new VPC gets "
            "two /28 subnets of its own."
        ),
    )


class QosSpec(Model):
    """A quality of service: a priority and limits that jobs ask for with --qos."""

    name: SlurmObjectName = Field(description="QoS name (lowercase).")
    description: Description | None = Field(default=None, description="What the QoS is for.")
    priority: int = Field(
        default=0,
        ge=0,
        le=2**31,
        description="QoS priority, weighted into job priority by slurm.accounting.qos_weight.",
    )
    max_wall_minutes: int | None = Field(
        default=None, ge=1, le=2**31, description="Longest run time of a job, in minutes."
    )
    max_jobs_per_user: int | None = Field(
        default=None, ge=0, le=2**31, description="Most running jobs per user."
    )
    max_tres_per_user: TresLimits = Field(
        default_factory=dict,
        description=(
            "Most resources a user's running jobs hold together, e.g. {gres/gpu: 16} "
            "(MaxTRESPerUser; TRES names: cpu, mem (MiB), node, gres/gpu, gres/gpu:<type>)."
        ),
    )
    max_tres_per_job: TresLimits = Field(
        default_factory=dict, description="Most resources one job holds (MaxTRESPerJob)."
    )
    grp_tres: TresLimits = Field(
        default_factory=dict,
        description="Most resources all jobs of this QoS hold together (GrpTRES).",
    )


class AccountSpec(Model):
    """A Slurm account: a node of the fair-share tree, with its users."""

    name: SlurmObjectName = Field(description="Account name (lowercase).")
    description: Description | None = Field(
        default=None, description="What the account is (default: its name)."
    )
    parent: SlurmObjectName = Field(
        default="root", description="Parent account: root, or another account declared here."
    )
    fairshare: int = Field(
        default=1,
        ge=1,
        le=2**31,
        description="Fair-share shares relative to the account's siblings (Fairshare=).",
    )
    users: list[UserName] = Field(
        default_factory=list,
        description=(
            "Login names of the account's users. A user's default account is the first "
            "account (in this list's order) that names them."
        ),
    )
    qos: list[SlurmObjectName] = Field(
        default_factory=list,
        description=(
            "QoS the account's jobs may use (declared under slurm.accounting.qos, or normal). "
            "Empty: Slurm's default, normal."
        ),
    )
    default_qos: SlurmObjectName | None = Field(
        default=None,
        description="QoS of a job that asks for none (default: the first of qos).",
    )
    grp_tres: TresLimits = Field(
        default_factory=dict,
        description="Most resources the account's running jobs hold together, e.g. {gres/gpu: 64}.",
    )


class AccountingSpec(Model):
    """Job accounting: slurmdbd and its database, and the accounts, users and QoS in it."""

    enabled: bool = Field(
        default=True,
        description="Run slurmdbd and record every job (sacct, sreport, fair share).",
    )
    database: AccountingDatabaseSpec = Field(
        default_factory=AccountingDatabaseSpec, description="The database slurmdbd uses."
    )
    accounts: list[AccountSpec] = Field(
        default_factory=list,
        max_length=1000,
        description=(
            "Accounts and their users, applied with sacctmgr whenever the configuration "
            "changes; removing one here removes it from Slurm (only what slurmstack created). "
            "Declaring any turns on multifactor priority with fair share."
        ),
    )
    qos: list[QosSpec] = Field(
        default_factory=list, max_length=200, description="Qualities of service."
    )
    enforce: bool = Field(
        default=True,
        description=(
            "With accounts declared: only users of an account may run jobs, and QoS and "
            "account limits are enforced (AccountingStorageEnforce=associations,limits,qos,safe)."
        ),
    )
    fairshare_weight: int = Field(
        default=10000,
        ge=0,
        le=2**32 - 1,
        description="PriorityWeightFairshare when accounts are declared.",
    )
    qos_weight: int = Field(
        default=1000,
        ge=0,
        le=2**32 - 1,
        description="PriorityWeightQOS when QoS are declared.",
    )
    keep_job_records_months: int | None = Field(
        default=None,
        ge=1,
        le=1200,
        description=(
            "Purge job and step records this many months after they end (usage totals are "
            "kept). Default: keep them."
        ),
    )


class SlurmSpec(Model):
    """Slurm options."""

    version: Annotated[str, StringConstraints(pattern=VERSION_PATTERN)] = Field(
        default=DEFAULT_VERSION,
        description=(
            "The Slurm release the images build from source and every node runs (YY.MM.P): "
            "one whose source slurmstack pins (image_pins.json; docs/slurm-versions.md). "
            "Changing it is a rolling upgrade in Slurm's order (slurmdbd, slurmctld, slurmd), "
            "within Slurm's compatibility window (three release lines back)."
        ),
    )
    upgrade_from: Annotated[str, StringConstraints(pattern=VERSION_PATTERN)] | None = Field(
        default=None,
        description=(
            "During an upgrade: the release the cluster's nodes ran before it (YY.MM.P). "
            "slurm.conf stays written for it, since every slurmd reads the whole file and one "
            "not yet refreshed stops at a key its release does not know; remove it once every "
            "pool's refresh is done (a live change). Default: none."
        ),
    )
    default_partition: str | None = Field(
        default=None,
        description="Partition (pool name) jobs go to by default. Default: first pool.",
    )
    settings: dict[str, SettingValue] = Field(
        default_factory=dict,
        description=(
            "Extra slurm.conf keys of the nodes' Slurm (slurm.version), appended last. Refused: "
            "keys slurmstack manages (accounting keys are slurm.accounting's, power-saving "
            "keys pools[].max_count's) and keys of older or newer Slurm releases only."
        ),
    )
    accounting: AccountingSpec = Field(
        default_factory=AccountingSpec,
        description="Job accounting (slurmdbd), accounts, users and QoS.",
    )


class NcclSpec(Model):
    """NCCL and libfabric environment overrides."""

    env: dict[str, SettingValue] = Field(
        default_factory=dict,
        description="Per-cluster overrides of the rendered NCCL/libfabric environment (set last).",
    )


class CostSpec(Model):
    """Price overrides for `slurmstack plan` (negotiated rates, other regions)."""

    instance_hourly_usd: dict[str, Annotated[float, Field(gt=0)]] = Field(
        default_factory=dict,
        description="Hourly price per instance type, replacing the catalog's on-demand list price.",
    )
    lustre_usd_per_gib_month: float | None = Field(
        default=None,
        gt=0,
        description="FSx for Lustre price per GiB-month, replacing the built-in one.",
    )


class RolloutSpec(Model):
    """How a new image (or launch template) reaches a pool's running nodes: the Auto Scaling
    group's instance refresh, in batches."""

    min_healthy_percentage: int = Field(
        default=90,
        ge=0,
        le=100,
        description=(
            "Share of a pool's nodes that stay in service during a refresh: the rest is "
            "replaced, batch by batch (90: a tenth at a time)."
        ),
    )
    instance_warmup_seconds: int = Field(
        default=900,
        ge=0,
        le=7200,
        description=(
            "Seconds a new node gets to boot and join Slurm before the next batch starts."
        ),
    )


# The images slurmstack can bake, by key (kind-architecture): the keys of image.parents.
ImageKey = Literal["nvidia-x86-64", "nvidia-arm64", "neuron-x86-64", "cpu-x86-64", "cpu-arm64"]


class ParentParameterVersion(Model):
    """A parent pinned by a version of its image's public SSM parameter."""

    parameter_version: int = Field(
        ge=1,
        description=(
            "Version of the image's public SSM parameter (the one `slurmstack plan` names) "
            "whose AMI is the parent; `aws ssm get-parameter-history --name <parameter>` lists "
            "them. The stack reads that version (GetParameter <parameter>:<version>) at deploy "
            "time. Parameter Store keeps a parameter's 100 newest versions: pin an AMI id for "
            "longer."
        ),
    )


class ImageSpec(Model):
    """The node images: baked by slurmstack with EC2 Image Builder, or your own."""

    version: int = Field(
        default=1,
        ge=1,
        le=1_000_000,
        description=(
            "Image generation. The parent AMIs (Deep Learning Base GPU, Neuron, Ubuntu 24.04) "
            "are resolved when an image is first built and then kept; raise this number to "
            "build every image again on the newest parents and roll it out."
        ),
    )
    ami: AmiId | None = Field(
        default=None,
        description=(
            "Your own image for every node (head_node.ami and pools[].ami win over it). It "
            "must meet the image contract (docs/node-images.md); nothing is baked for it."
        ),
    )
    build_instance_type: str | None = Field(
        default=None,
        description=(
            "Instance type Image Builder builds and tests images on. Default: c7i.2xlarge "
            "(x86_64), c7g.2xlarge (arm64)."
        ),
    )
    parents: dict[ImageKey, AmiId | ParentParameterVersion] = Field(
        default_factory=dict,
        description=(
            "Pinned parents by image key: an AMI id, e.g. {nvidia-x86-64: ami-...}, or a version "
            "of the image's public SSM parameter, e.g. {cpu-x86-64: {parameter_version: 42}}: "
            "that image is built on it instead of the newest AMI its parameter names (plan "
            "shows which). Pin an earlier parent when the newest one's kernel has no FSx Lustre "
            "client yet."
        ),
    )
    keep_build_instance: bool = Field(
        default=False,
        description=(
            "Keep the build instance of a failed bake running, to look into it with SSM "
            "Session Manager (docs/images.md, 'When a bake fails'); terminate it yourself."
        ),
    )
    rollout: RolloutSpec = Field(
        default_factory=RolloutSpec, description="How new images reach running pools."
    )


class BreakerSpec(Model):
    """The circuit breaker on automatic replacement, one per pool."""

    replacements: int = Field(
        default=3,
        ge=1,
        le=1000,
        description=(
            "Replacements a pool may have within window_minutes. The next one trips the "
            "pool's breaker: automatic replacement in that pool stops (its group's "
            "ReplaceUnhealthy process is suspended too) and stays stopped until an operator "
            "resets it on the head node: `slurmstack-node breaker reset <pool>`."
        ),
    )
    window_minutes: int = Field(
        default=60, ge=1, le=10080, description="The window replacements are counted in."
    )


class XidHandling(enum.StrEnum):
    """What an XID in the kernel log does to a node (health.xids)."""

    REBOOT = "reboot"  # drain; the controller reboots the node (a GPU reset)
    REPLACE = "replace"  # drain; the controller replaces the instance
    LEAVE = "leave"  # drain; the reason stays for an operator
    IGNORE = "ignore"  # no drain


# NVIDIA's Xid codes are small numbers (the catalog reaches 172); room for new ones.
XID_MAX = 999


def _xid_numbers(value: object) -> object:
    """health.xids' keys as numbers: YAML gives 167 as a number, JSON as "167"."""
    if not isinstance(value, dict):
        return value
    numbers: dict[object, object] = {}
    wrong = []
    for key, handling in value.items():
        text = str(key).strip()
        if isinstance(key, bool) or not text.isdigit() or not 1 <= int(text) <= XID_MAX:
            wrong.append(repr(key))
        else:
            numbers[int(text)] = handling
    if wrong:
        raise ValueError(
            f"{', '.join(wrong)} {'is not an XID' if len(wrong) == 1 else 'are not XIDs'}: "
            f"keys are XID numbers from 1 to {XID_MAX}, as the kernel log prints them "
            "(NVRM: Xid (PCI:...): 79, ...), e.g. {167: reboot}"
        )
    return numbers


class HealthSpec(Model):
    """Health checks and repair: what drains a node and what the head node does about it
    (docs/when-nodes-fail.md)."""

    check_interval_seconds: int = Field(
        default=60,
        ge=10,
        le=3600,
        description=(
            "Slurm's HealthCheckInterval: how often every node runs its cheap checks (GPUs, "
            "ECC, new critical XIDs, EFA ports, file systems, full disks, spot notice). A "
            "failed check drains the node within one interval."
        ),
    )
    deep_diagnostic: bool = Field(
        default=True,
        description=(
            "On an instance's first boot, run DCGM's diagnostic (`dcgmi diag -r 2`) where DCGM "
            "is installed, before the node joins Slurm; a node that fails it is replaced."
        ),
    )
    disk_full_percent: int = Field(
        default=95,
        ge=50,
        le=100,
        description="The root volume or local scratch is full from this share used: drained.",
    )
    breaker: BreakerSpec = Field(
        default_factory=BreakerSpec, description="The per-pool circuit breaker."
    )
    capacity_block_drain_minutes: int = Field(
        default=60,
        ge=0,
        le=1440,
        description=(
            "A Capacity Block's nodes are drained this many minutes before EC2 starts "
            "terminating its instances (30 minutes before the block's end), so jobs can "
            "checkpoint."
        ),
    )
    scale_in_wait_minutes: int = Field(
        default=120,
        ge=0,
        le=960,
        description=(
            "How long an instance its group terminates (scale-in, instance refresh, "
            "replacement) waits, drained, for its node's jobs before it goes (AWS holds an "
            "instance at most 100 heartbeat timeouts of 10 minutes in the lifecycle hook)."
        ),
    )
    actions: dict[str, Remedy] = Field(
        default_factory=dict,
        description=(
            "Overrides of the reason -> action table (docs/reference/repair-table.md): cause -> "
            'reboot, replace or leave, e.g. {"gpu-xid:79": reboot, efa-port: replace}.'
        ),
    )
    xids: Annotated[dict[int, XidHandling], BeforeValidator(_xid_numbers)] = Field(
        default_factory=dict,
        description=(
            "XIDs to add to or change in the table of XIDs that drain a node "
            "(docs/gpu-faults.md; NVIDIA's Xid catalog): XID -> reboot, replace or leave (it drains "
            "the node, and the controller does that), or ignore (it no longer drains), e.g. "
            "{167: reboot, 74: ignore}. No new image: nodes read it from their configuration "
            "(pool nodes at their next boot)."
        ),
    )


# CloudWatch Logs keeps a log group's events for one of these numbers of days (CloudWatch Logs
# API Reference, PutRetentionPolicy: retentionInDays).
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096,
                      1827, 2192, 2557, 2922, 3288, 3653)  # fmt: skip
EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"
Email = Annotated[str, StringConstraints(pattern=EMAIL_PATTERN, max_length=254)]


class AlertsSpec(Model):
    """When an alert fires (docs/observing.md lists every rule and its threshold)."""

    email: list[Email] = Field(
        default_factory=list,
        max_length=20,
        description=(
            "Addresses subscribed to the cluster's alert topic (SNS sends each a confirmation "
            "mail first). Alerts also go to EventBridge whatever this says."
        ),
    )
    idle_gpu_minutes: int = Field(
        default=30,
        ge=5,
        le=1440,
        description="A job's GPUs allocated but idle (below idle_gpu_percent) this long: alert.",
    )
    idle_gpu_percent: int = Field(
        default=5, ge=1, le=50, description="GPU utilisation below which an allocated GPU is idle."
    )
    straggler_percent: int = Field(
        default=30,
        ge=5,
        le=90,
        description=(
            "A node of a multi-node job whose GPU utilisation is this many percent below the "
            "job's median for 10 minutes is a straggler: alert."
        ),
    )
    filesystem_full_percent: int = Field(
        default=90, ge=50, le=99, description="A mounted file system this full: alert."
    )
    capacity_block_hours: int = Field(
        default=24,
        ge=1,
        le=168,
        description="A Capacity Block ending within this many hours: alert.",
    )


class ObservabilitySpec(Model):
    """Metrics, dashboards, alerts, events and logs (docs/observing.md)."""

    retention_days: int = Field(
        default=15,
        ge=1,
        le=3650,
        description="How long the head's Prometheus keeps samples (on the state volume).",
    )
    retention_gib: int = Field(
        default=20,
        ge=1,
        le=GP3_MAX_GIB,
        description=(
            "The most the head's Prometheus keeps on the state volume; the oldest samples go "
            "first. Must fit in head_node.state_volume_gib beside Slurm's state."
        ),
    )
    scrape_interval_seconds: int = Field(
        default=30, ge=5, le=300, description="How often Prometheus reads every exporter."
    )
    alerts: AlertsSpec = Field(default_factory=AlertsSpec, description="Alert thresholds, email.")
    budget_monthly_usd: float | None = Field(
        default=None,
        gt=0,
        description=(
            "An AWS Budgets cost budget for the cluster's tag, alerting the topic at 80% of "
            "actual and 100% of forecast spend; checked against plan's monthly estimate."
        ),
    )
    log_retention_days: int = Field(
        default=30,
        description=(
            "Days CloudWatch Logs keeps the shipped logs (slurmctld, slurmdbd, slurmd, the "
            "agent, the health checks); one of CloudWatch's values: "
            + ", ".join(map(str, LOG_RETENTION_DAYS))
            + "."
        ),
    )
    managed_prometheus: bool = Field(
        default=False,
        description=(
            "Also remote-write every sample to an Amazon Managed Service for Prometheus "
            "workspace (for larger or longer-lived clusters)."
        ),
    )
    managed_grafana: bool = Field(
        default=False,
        description=(
            "An Amazon Managed Grafana workspace reading the managed Prometheus (needs "
            "managed_prometheus and IAM Identity Center in the account)."
        ),
    )

    @field_validator("log_retention_days")
    @classmethod
    def _retention_cloudwatch_takes(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            near = min(LOG_RETENTION_DAYS, key=lambda d: abs(d - value))
            raise ValueError(
                f"CloudWatch Logs keeps logs for one of {', '.join(map(str, LOG_RETENTION_DAYS))} "
                f"days, not {value}: e.g. {near}"
            )
        return value


class ClusterSpec(Model):
    """A slurmstack cluster definition (the object under the stack config key slurmstack:cluster)."""

    name: ClusterName = Field(description="Cluster name: lowercase letters, digits and '-'.")
    region: str = Field(description="AWS region, e.g. us-east-1.")
    availability_zone: str = Field(
        description="The one AZ for nodes, placement groups and Lustre, e.g. us-east-1a."
    )
    network: NetworkSpec = Field(default_factory=NetworkSpec, description="Networking.")
    head_node: HeadNodeSpec = Field(description="The Slurm head node.")
    pools: list[PoolSpec] = Field(min_length=1, max_length=64, description="Worker pools.")
    login_pools: list[LoginPoolSpec] = Field(
        default_factory=list,
        max_length=8,
        description=(
            "Login nodes (docs/people-and-login-nodes.md). None: people work through the head "
            "node's Session Manager shell, as operators do."
        ),
    )
    users: list[UserSpec] = Field(
        default_factory=list,
        max_length=5000,
        description="People: the same accounts on every node (local accounts win over directory).",
    )
    groups: list[GroupSpec] = Field(
        default_factory=list, max_length=1000, description="Groups the users name."
    )
    directory: DirectorySpec | None = Field(
        default=None, description="People from LDAP or Active Directory, through SSSD."
    )
    storage: StorageSpec = Field(default_factory=StorageSpec, description="Storage tiers.")
    slurm: SlurmSpec = Field(default_factory=SlurmSpec, description="Slurm options.")
    nccl: NcclSpec = Field(default_factory=NcclSpec, description="NCCL/libfabric overrides.")
    cost: CostSpec = Field(default_factory=CostSpec, description="Price overrides for plan.")
    image: ImageSpec = Field(default_factory=ImageSpec, description="Node images.")
    health: HealthSpec = Field(
        default_factory=HealthSpec, description="Health checks and automatic repair."
    )
    observability: ObservabilitySpec = Field(
        default_factory=ObservabilitySpec,
        description="Metrics, dashboards, alerts, events and logs.",
    )
    tags: dict[str, str] = Field(
        default_factory=dict, description="Tags added to every AWS resource."
    )
