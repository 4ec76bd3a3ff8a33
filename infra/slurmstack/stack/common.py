"""Names, tags, ports and small pure helpers shared by the stack components.

Everything here is pure Python (no Pulumi import) so the offline report and the tests can
use the same constants. What the cluster shares with its nodes (tags, Slurm's ports, the state
volume's device name, the node agent's path) is the contract's: import it from
slurmstack.contract, never from here.
"""

from __future__ import annotations

import enum

from slurmstack.contract import LOGIN_ROLE, POOL_ROLE, partition, resource_tags
from slurmstack.plan import ClusterPlan


class Role(enum.StrEnum):
    """Value of the ``slurmstack:role`` tag, and the middle part of resource names."""

    NETWORK = "network"
    SECURITY = "security"
    IDENTITY = "identity"
    SECRETS = "secrets"
    BUCKET = "bucket"
    LUSTRE = "lustre"
    HOME = "home"
    CONFIG = "config"
    HEAD = "head"
    POOL = POOL_ROLE
    IMAGE = "image"  # the node images (slurmstack.stack.image)
    ACCOUNTING = "accounting"  # the accounting database (slurmstack.stack.accounting)
    LOGIN = LOGIN_ROLE  # the login pools (slurmstack.stack.login_pool)
    MONITORING = "monitoring"  # alert topic, log groups, budget (slurmstack.stack.monitoring)
    DATA = "data"  # file systems of yours, looked up (slurmstack.stack.existing_storage)


# FSx for Lustre: LNet on 988, and 1018-1023 for the Lustre client/server callbacks.
LUSTRE_PORT = 988
LUSTRE_CALLBACK_PORTS = (1018, 1023)
NFS_PORT = 2049

# Root device of the Ubuntu and Deep Learning (Ubuntu) AMIs. A pinned AMI with another root
# device name would get an extra, empty volume instead of a resized root.
ROOT_DEVICE = "/dev/sda1"

EVERYWHERE_V4 = "0.0.0.0/0"


# The Slurm release a head or a pool's nodes run (slurm.version, pools[].slurm_version).
SLURM_VERSION_TAG = "slurmstack:slurm-version"


def tags(plan: ClusterPlan, role: Role, name: str | None = None, **extra: str) -> dict[str, str]:
    """The definition's tags, then slurmstack's own (which the definition cannot override)."""
    return resource_tags(plan.spec.tags, plan.name, role.value, name, **extra)


def ssm_parameter_arn(region: str, account: str, name: str) -> str:
    """ARN of an SSM parameter (or parameter path) given by its full name ``/a/b``."""
    return f"arn:{partition(region)}:ssm:{region}:{account}:parameter/{name.lstrip('/')}"
