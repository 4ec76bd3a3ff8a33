"""The names slurmstack gives things: roles, the node-name schemes, the AWS resources of a
pool, tags, secrets and the deploy-time parameters."""

from __future__ import annotations

import enum
import ipaddress

__all__ = [
    "CLUSTER_TAG",
    "DRAIN_HOOK_HEARTBEAT_SECONDS",
    "DRAIN_HOOK_NAME",
    "ELASTIC_MARK",
    "ELASTIC_TAG",
    "EXISTING_DNS",
    "EXISTING_MOUNT_NAME",
    "GET_PARAMETERS_MAX",
    "HEAD_ROLE",
    "IMAGE_TAG",
    "JOIN_HOOK_HEARTBEAT_SECONDS",
    "JOIN_HOOK_NAME",
    "LAUNCH_TAG",
    "NODE_INDEX_MAX",
    "POOL_PARAMETERS",
    "POOL_ROLE",
    "POOL_TAG",
    "ROLE_TAG",
    "SLURM_USER",
    "TAG_PREFIX",
    "DeployParameter",
    "accounting_password_secret_name",
    "backup_host",
    "elastic_index",
    "elastic_node_name",
    "elastic_node_names",
    "elastic_node_prefix",
    "existing_parameter",
    "head_host",
    "is_node_name_of",
    "munge_secret_name",
    "node_name",
    "node_name_pattern",
    "node_name_prefix",
    "parameter_calls",
    "parameter_name",
    "parameter_prefix",
    "resource_name",
    "resource_tags",
]

# --- roles, names ----------------------------------------------------------------------

# The head node's role: in bootstrap.env and node.json, the config store's manifest and the
# render layout ("head/..."). A pool may not take this name.
HEAD_ROLE = "head"


def head_host(cluster: str) -> str:
    """The head node's host name: SlurmctldHost in slurm.conf, its hostname, and the name
    every worker's /etc/hosts gives the head's address."""
    return f"{cluster}-head"


def backup_host(cluster: str) -> str:
    """The backup controller's host name (head_node.backup): the second SlurmctldHost, its
    hostname, and its name in every node's /etc/hosts."""
    return f"{cluster}-backup"


# Dynamic node names are <pool>-<n>, n the low 16 bits of the node's private IPv4 address:
# unique within the compute subnet (an AWS subnet is at most a /16), stable for the
# instance's life, and inside one hostlist range per pool (gres.conf relies on that).
NODE_INDEX_MAX = 0xFFFF


def node_name_prefix(pool: str) -> str:
    return f"{pool}-"


def node_name(prefix: str, address: str) -> str:
    """The Slurm name of the node of a pool (given by its ``node_name_prefix``) at
    ``address``."""
    return f"{prefix}{int(ipaddress.IPv4Address(address)) & NODE_INDEX_MAX}"


def node_name_pattern(pool: str) -> str:
    """Every name a node of ``pool`` can have, as a Slurm hostlist."""
    return f"{node_name_prefix(pool)}[0-{NODE_INDEX_MAX}]"


def is_node_name_of(name: str, prefix: str) -> bool:
    """Whether ``name`` is a name the scheme gives a node of the pool with ``prefix``."""
    index = name[len(prefix) :]
    return name.startswith(prefix) and index.isdigit() and int(index) <= NODE_INDEX_MAX


# Elastic nodes (the part of a pool above its count, started by Slurm's power saving) are
# CLOUD nodes declared in slurm.conf, so their names exist before any instance does:
# <pool>-e1 .. <pool>-e<max_count - count>. The "e" keeps them apart from the pool's dynamic
# names (<pool>-<digits>), which the reaper deletes and gres.conf's 0-65535 range covers.
ELASTIC_MARK = "e"


def elastic_node_prefix(pool: str) -> str:
    return f"{node_name_prefix(pool)}{ELASTIC_MARK}"


def elastic_node_name(pool: str, index: int) -> str:
    """The ``index``-th (from 1) elastic node of ``pool``."""
    return f"{elastic_node_prefix(pool)}{index}"


def elastic_node_names(pool: str, nodes: int) -> str:
    """Every elastic node of a pool with ``nodes`` of them, as a Slurm hostlist."""
    prefix = elastic_node_prefix(pool)
    return f"{prefix}1" if nodes == 1 else f"{prefix}[1-{nodes}]"


def elastic_index(name: str, pool: str) -> int | None:
    """The index of elastic node ``name`` of ``pool``, or None if it is not one."""
    prefix = elastic_node_prefix(pool)
    index = name[len(prefix) :]
    if not name.startswith(prefix) or not index.isdigit() or index.startswith("0"):
        return None
    return int(index)


# The slurmstack:role tag of a pool's resources (the stack's Role.POOL).
POOL_ROLE = "pool"


def resource_name(cluster: str, role: str, pool: str | None = None) -> str:
    """The one name scheme of the cluster's AWS resources, ``{cluster}-{role}[-{pool}]``: the
    stack's logical and (where AWS takes one) physical names. A pool's launch template,
    placement group, Auto Scaling group and role are ``resource_name(cluster, POOL_ROLE,
    pool)``: the head's controller finds the group by it, the power programs launch elastic
    nodes from the template of this name."""
    return f"{cluster}-{role}" + (f"-{pool}" if pool else "")


# --- tags ------------------------------------------------------------------------------

# On every resource of the cluster (the stack); the reaper finds the cluster's instances by
# CLUSTER_TAG and their pool by POOL_TAG. The prefix is slurmstack's own: definitions may not
# use it for their tags.
TAG_PREFIX = "slurmstack:"
CLUSTER_TAG = f"{TAG_PREFIX}cluster"
ROLE_TAG = f"{TAG_PREFIX}role"
POOL_TAG = f"{TAG_PREFIX}pool"
IMAGE_TAG = f"{TAG_PREFIX}image"  # on an Image Builder image: the key of the image it is
# On an instance the power programs launched (value: its pool), from the launch itself: the
# node agent knows by it to wait for its name, the head's role may terminate only such
# instances. LAUNCH_TAG, also from the launch, is the id of the launch (one EC2 Fleet request):
# the head writes one object per launch to the bucket (launch_key: instance -> node name) as
# soon as EC2 has said which instances it launched, and the node reads its name there. EC2
# cannot give each instance of one request a tag of its own, and a CreateTags call per instance
# is what a thousand-node launch cannot afford.
ELASTIC_TAG = f"{TAG_PREFIX}elastic"
LAUNCH_TAG = f"{TAG_PREFIX}launch"


def resource_tags(
    user_tags: dict[str, str], cluster: str, role: str, name: str | None = None, **extra: str
) -> dict[str, str]:
    """The definition's tags, then slurmstack's own (which the definition cannot override):
    what the stack puts on every resource, and what the power programs put on the elastic
    instances they launch (the pool's tags, as its Auto Scaling group propagates them)."""
    out = dict(user_tags)
    out[CLUSTER_TAG] = cluster
    out[ROLE_TAG] = role
    if name is not None:
        out["Name"] = name
    out.update(extra)
    return out


# slurm.conf's SlurmUser: slurmctld runs as it, and so do the programs it runs.
SLURM_USER = "slurm"
# --- deploy-time values ----------------------------------------------------------------


class DeployParameter(enum.StrEnum):
    """Values known only at deploy time. The stack writes each to an SSM parameter under
    the cluster's prefix; nodes read them at boot (waiting until they exist), so user data
    carries only stable identifiers and no node waits on a slow resource just for its address."""

    HEAD_ADDRESS = "head/address"
    # The backup controller's address (head_node.backup): its own network interface's, kept.
    BACKUP_ADDRESS = "head/backup-address"
    # The EFS file system holding Slurm's state when there is a backup controller (fs-...):
    # both controllers mount it where the head's state volume is otherwise mounted.
    STATE_EFS_ID = "head/state-efs-id"
    BUCKET = "bucket/name"
    LUSTRE_DNS = "lustre/dns-name"
    LUSTRE_MOUNT_NAME = "lustre/mount-name"
    EFS_ID = "efs/id"
    CONFIG_MANIFEST = "config/manifest"
    # The head node's Slurm state volume id (vol-...). On Nitro the volume shows up as an NVMe
    # disk whose serial is the id without its dash, which is how the head finds it.
    STATE_VOLUME_ID = "head/state-volume-id"
    # The compute subnet (subnet-...): the power programs launch elastic nodes into it.
    COMPUTE_SUBNET_ID = "network/compute-subnet-id"
    # The RDS accounting database's address (slurm.accounting.database.type rds): known only
    # once the instance exists; the head's agent waits for it (slurmdbd.conf's StorageHost).
    ACCOUNTING_DB_HOST = "accounting/db-host"
    # The alert topic's ARN (SNS): the head's alert relay publishes to it.
    ALERT_TOPIC_ARN = "monitoring/alert-topic-arn"
    # The managed Prometheus workspace's remote-write URL (observability.managed_prometheus).
    REMOTE_WRITE_URL = "monitoring/remote-write-url"


def existing_parameter(file_system_id: str, what: str) -> str:
    """The key of a deploy-time value of a file system the cluster did not create (the stack
    looks it up and publishes it): ``storage/<id>/dns-name`` or ``storage/<id>/mount-name``."""
    return f"storage/{file_system_id}/{what}"


EXISTING_DNS = "dns-name"
EXISTING_MOUNT_NAME = "mount-name"


def parameter_prefix(cluster: str) -> str:
    """SSM parameter path holding the deploy-time values of ``cluster``."""
    return f"/slurmstack/{cluster}"


def parameter_name(prefix: str, key: DeployParameter | str) -> str:
    """Full SSM parameter name of a deploy-time value, e.g. /slurmstack/llm-train/head/address."""
    return f"{prefix}/{key}"


# GetParameters takes at most ten names a call (AWS Systems Manager API Reference,
# GetParameters: Names, 1 to 10 items).
GET_PARAMETERS_MAX = 10
# What a pool node reads (its boot and its agent): one GetParameters call. The head reads every
# DeployParameter (two calls: it is one node).
POOL_PARAMETERS = tuple(
    k.value
    for k in (
        DeployParameter.HEAD_ADDRESS,
        DeployParameter.BUCKET,
        DeployParameter.LUSTRE_DNS,
        DeployParameter.LUSTRE_MOUNT_NAME,
        DeployParameter.EFS_ID,
        DeployParameter.CONFIG_MANIFEST,
    )
)


def parameter_calls(prefix: str, role: str, also: str = "") -> list[list[str]]:
    """The names of the deploy-time parameters a node of ``role`` reads (and ``also``, a key
    asked for beyond them), as GetParameters calls of at most GET_PARAMETERS_MAX names."""
    keys = [k for k in DeployParameter if role == HEAD_ROLE or k in POOL_PARAMETERS or k == also]
    names = [parameter_name(prefix, k) for k in keys]
    return [names[i : i + GET_PARAMETERS_MAX] for i in range(0, len(names), GET_PARAMETERS_MAX)]


def munge_secret_name(cluster: str) -> str:
    """The Secrets Manager secret holding the cluster's munge key."""
    return f"slurmstack/{cluster}/munge-key"


def accounting_password_secret_name(cluster: str) -> str:
    """The Secrets Manager secret the stack creates for the accounting database's password
    (the local and rds databases; an external one's is named by the definition)."""
    return f"slurmstack/{cluster}/accounting-db-password"


# The pools' groups hold their terminating instances in this lifecycle hook until the head's
# controller has drained the node, seen its jobs end (or waited scale_in_wait_minutes) and
# its logs copied, then completes the action (slurmstack.stack.worker_pool).
DRAIN_HOOK_NAME = "slurmstack-drain"
# The hook's heartbeat timeout: the controller records a heartbeat on every pass while it
# waits, so the action outlives passes without AWS's default hour running out between them.
DRAIN_HOOK_HEARTBEAT_SECONDS = 600
# The pools' groups hold a launching instance in this lifecycle hook (Pending:Wait) until its
# node has joined Slurm: its last boot step (`slurmstack-node joined`) completes the action with
# CONTINUE once slurmctld has it registered and responding, and only then is the instance
# InService, so an instance refresh counts its warm-up from a node that runs jobs. A boot that
# fails completes it with ABANDON (the group terminates the instance and launches another); a
# boot that never ends is abandoned when the heartbeat timeout runs out (AWS's default hour,
# which covers a first boot with DCGM's diagnostic: DEEP_DIAGNOSTIC_SECONDS).
JOIN_HOOK_NAME = "slurmstack-join"
JOIN_HOOK_HEARTBEAT_SECONDS = 3600
