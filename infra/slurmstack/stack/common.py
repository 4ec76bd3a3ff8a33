"""Names, tags, ports and small pure helpers shared by the stack components.

Everything here is pure Python (no Pulumi import) so the offline report and the tests can
use the same constants. The tags, Slurm's ports, the state volume's device name and the node
agent's path are the cluster's contract with its nodes (slurmstack.contract); they are named
here for the components that use them.
"""

from __future__ import annotations

import enum

from slurmstack.contract import (  # the names users of this module import from it
    AGENT_PATH as AGENT_PATH,
)
from slurmstack.contract import (
    CLUSTER_TAG as CLUSTER_TAG,
)
from slurmstack.contract import POOL_ROLE, resource_tags
from slurmstack.contract import (
    POOL_TAG as POOL_TAG,
)
from slurmstack.contract import (
    ROLE_TAG as ROLE_TAG,
)
from slurmstack.contract import (
    SLURMCTLD_PORT as SLURMCTLD_PORT,
)
from slurmstack.contract import (
    SLURMD_PORT as SLURMD_PORT,
)
from slurmstack.contract import (
    SRUN_PORT_RANGE as SRUN_PORT_RANGE,
)
from slurmstack.contract import (
    STATE_VOLUME_DEVICE as STATE_VOLUME_DEVICE,
)
from slurmstack.contract import (
    partition as partition,
)
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


# FSx for Lustre: LNet on 988, and 1018-1023 for the Lustre client/server callbacks.
LUSTRE_PORT = 988
LUSTRE_CALLBACK_PORTS = (1018, 1023)
NFS_PORT = 2049

# Root device of the Ubuntu and Deep Learning (Ubuntu) AMIs. A pinned AMI with another root
# device name would get an extra, empty volume instead of a resized root.
ROOT_DEVICE = "/dev/sda1"

# The node agent the rendered bootstrap installs on every node (slurmstack.node.cli). The
# config-apply SSM document runs `slurmstack-node sync-config` on the head node, then
# `scontrol reconfigure`; by absolute path, as Run Command's PATH is not the login PATH.
NODE_AGENT = AGENT_PATH

EVERYWHERE_V4 = "0.0.0.0/0"


def resource_name(cluster: str, role: Role | str, pool: str | None = None) -> str:
    """Deterministic name ``{cluster}-{role}[-{pool}]`` (logical and, where AWS takes one,
    physical name)."""
    role_part = role.value if isinstance(role, Role) else role
    return f"{cluster}-{role_part}" + (f"-{pool}" if pool else "")


# The Slurm release a head or a pool's nodes run (slurm.version, pools[].slurm_version).
SLURM_VERSION_TAG = "slurmstack:slurm-version"


def tags(plan: ClusterPlan, role: Role, name: str | None = None, **extra: str) -> dict[str, str]:
    """The definition's tags, then slurmstack's own (which the definition cannot override)."""
    return resource_tags(plan.spec.tags, plan.name, role.value, name, **extra)


def ssm_parameter_arn(region: str, account: str, name: str) -> str:
    """ARN of an SSM parameter (or parameter path) given by its full name ``/a/b``."""
    return f"arn:{partition(region)}:ssm:{region}:{account}:parameter/{name.lstrip('/')}"
