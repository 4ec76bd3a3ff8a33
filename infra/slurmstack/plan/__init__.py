"""The plan: a pure, frozen derivation from a valid definition and the catalog.

Everything the templates and the Pulumi stack need that is not written literally in the
definition is decided here, once, one module per concern: ``pools`` (Slurm's view of each
pool's nodes, EFA layout, placement, mounts, NCCL environment), ``head``, ``storage``
(mounts, Lustre), ``network`` (subnets, where the head sits), ``slurm`` (MaxNodeCount,
GresTypes, extra keys), ``images`` (the node images baked, and what each node's image must
hold), ``health`` (the checks nodes run, the head controller's repair policy), ``people`` (the
accounts every node creates, the directory, the login pools), ``accounting``
(slurmdbd, its database, accounts, users, QoS and the usage report's prices); ``cluster`` puts
them together (``build_plan``). Rules the checks apply too live in modules of their own
(slurmstack.rules.efa, slurmstack.rules.subnets, slurmstack.rules.fsx, slurmstack.rules.accounting). ``build_plan``
expects a definition that passed the checks (it raises ``PlanError`` when a fact it needs is
missing, which the checks report first).

The names below are the plan's public surface (``from slurmstack.plan import ...``).
"""

from slurmstack.image_pins import image_pins
from slurmstack.plan.accounting import (
    ENFORCE,
    INNODB_LOCK_WAIT_TIMEOUT,
    INNODB_LOG_FILE_MIB,
    MAX_ALLOWED_PACKET_MIB,
    RDS_ENGINE_VERSION,
    RDS_PARAMETER_FAMILY,
    AccountingPlan,
    DatabasePlan,
    accounting_plan,
    plan_rds_subnets,
    pool_price,
)
from slurmstack.plan.cluster import ClusterPlan, build_plan
from slurmstack.plan.errors import PlanError
from slurmstack.plan.head import HeadPlan
from slurmstack.plan.health import HealthPlan
from slurmstack.plan.images import (
    ImageKind,
    ImagePlan,
    head_packages,
    image_contract,
    image_of,
    image_plans,
    own_ami,
    role_image_contract,
)
from slurmstack.plan.people import LoginPoolPlan, identities
from slurmstack.plan.pools import (
    MEMORY_HEADROOM_FRACTION,
    MEMORY_HEADROOM_MIN_MIB,
    RESERVED_CAPACITY,
    GpuPlan,
    PoolPlan,
    existing_placement_group,
    resolve_placement_group,
    schedulable_memory_mib,
)
from slurmstack.plan.slurm import (
    MAX_NODE_COUNT_FACTOR,
    MAX_NODE_COUNT_STEP,
    RESUME_TIMEOUT_SECONDS,
    SUSPEND_TIMEOUT_SECONDS,
    oldest_slurm_version,
    pool_slurm_version,
)
from slurmstack.plan.storage import LustrePlan, MountPlan
from slurmstack.rules.accounting import (
    INNODB_BUFFER_POOL_MAX_MIB,
    INNODB_BUFFER_POOL_MIN_MIB,
    buffer_pool_mib,
)
from slurmstack.rules.data import (
    AssociationPlan,
    ExistingFileSystemPlan,
    S3MountPlan,
    client_security_groups,
)
from slurmstack.rules.efa import InterfaceType, NetworkInterfacePlan, efa_interfaces, resolve_efa
from slurmstack.rules.subnets import carve as subnets

__all__ = [
    "ENFORCE",
    "INNODB_BUFFER_POOL_MAX_MIB",
    "INNODB_BUFFER_POOL_MIN_MIB",
    "INNODB_LOCK_WAIT_TIMEOUT",
    "INNODB_LOG_FILE_MIB",
    "MAX_ALLOWED_PACKET_MIB",
    "MAX_NODE_COUNT_FACTOR",
    "MAX_NODE_COUNT_STEP",
    "MEMORY_HEADROOM_FRACTION",
    "MEMORY_HEADROOM_MIN_MIB",
    "RDS_ENGINE_VERSION",
    "RDS_PARAMETER_FAMILY",
    "RESERVED_CAPACITY",
    "RESUME_TIMEOUT_SECONDS",
    "SUSPEND_TIMEOUT_SECONDS",
    "AccountingPlan",
    "AssociationPlan",
    "ClusterPlan",
    "DatabasePlan",
    "ExistingFileSystemPlan",
    "GpuPlan",
    "HeadPlan",
    "HealthPlan",
    "ImageKind",
    "ImagePlan",
    "InterfaceType",
    "LoginPoolPlan",
    "LustrePlan",
    "MountPlan",
    "NetworkInterfacePlan",
    "PlanError",
    "PoolPlan",
    "S3MountPlan",
    "accounting_plan",
    "buffer_pool_mib",
    "build_plan",
    "client_security_groups",
    "efa_interfaces",
    "existing_placement_group",
    "head_packages",
    "identities",
    "image_contract",
    "image_of",
    "image_pins",
    "image_plans",
    "oldest_slurm_version",
    "own_ami",
    "plan_rds_subnets",
    "pool_price",
    "pool_slurm_version",
    "resolve_efa",
    "resolve_placement_group",
    "role_image_contract",
    "schedulable_memory_mib",
    "subnets",
]
