"""The contract between the control plane and the nodes: every fact both sides must agree on.

Plan, render, the templates (as the Jinja global ``contract``), the stack and the report take
these names from here, and so does the node agent, on the node: this module ships with it (the
config store delivers ``slurmstack/contract.py`` next to ``slurmstack/node/``). Nothing else
spells a node path, a parameter key, a port, a tag, the node-name scheme or the layout of a
node's configuration files. The first-boot script (``slurmstack/node/bootstrap.py``) runs
before the agent is installed: render writes the names it takes from here into its copy in the
user data (``slurmstack.render.cloud_init.bootstrap_script``).

Standard library only, no I/O at import: it runs on the nodes' system Python.
"""

from __future__ import annotations

import enum
import hashlib
import ipaddress
import json
import re
from dataclasses import dataclass, field, fields
from typing import Any

# --- roles, names ----------------------------------------------------------------------

# The head node's role: in bootstrap.env and node.json, the config store's manifest and the
# render layout ("head/..."). A pool may not take this name.
HEAD_ROLE = "head"


def head_host(cluster: str) -> str:
    """The head node's host name: SlurmctldHost in slurm.conf, its hostname, and the name
    every worker's /etc/hosts gives the head's address."""
    return f"{cluster}-head"


# Dynamic node names are <pool>-<n>, n the low 16 bits of the node's private IPv4 address:
# unique within the compute subnet (an AWS subnet is at most a /16), stable for the
# instance's life, and inside one hostlist range per pool (gres.conf relies on that).
NODE_INDEX_MAX = 0xFFFF


def pool_group_name(cluster: str, pool: str) -> str:
    """The pool's Auto Scaling group (and launch template, placement group, role): the stack
    names them so, the head's controller finds the group by it."""
    return f"{cluster}-pool-{pool}"


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


def pool_resource_name(cluster: str, pool: str) -> str:
    """The name of a pool's launch template, placement group, Auto Scaling group and role:
    ``{cluster}-pool-{pool}`` (the stack's resource_name scheme). The power programs launch
    elastic nodes from the launch template of this name."""
    return f"{cluster}-{POOL_ROLE}-{pool}"


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
# instances. Its Slurm node name follows as NODE_NAME_TAG once EC2 has said which instance
# takes which name.
ELASTIC_TAG = f"{TAG_PREFIX}elastic"
NODE_NAME_TAG = f"{TAG_PREFIX}node-name"


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

# --- network ---------------------------------------------------------------------------

# Slurm's ports: slurm.conf uses them and the stack's security groups open exactly these.
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
SRUN_PORT_RANGE = (60001, 63000)
# slurmdbd's (slurmdbd.conf DbdPort, slurm.conf AccountingStoragePort): Slurm's default. Only
# the head node talks to it (slurmctld, sacct and sacctmgr run there), so no group opens it.
SLURMDBD_PORT = 6819

# The instance metadata service (IPv6 only answers on Nitro instances that enable it).
IMDS_IPV4 = "169.254.169.254"
IMDS_IPV6 = "fd00:ec2::254"

# --- deploy-time values ----------------------------------------------------------------


class DeployParameter(enum.StrEnum):
    """Values known only at deploy time. The stack writes each to an SSM parameter under
    the cluster's prefix; nodes read them at boot (waiting until they exist), so user data
    carries only stable identifiers and no node waits on a slow resource just for its address."""

    HEAD_ADDRESS = "head/address"
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


def parameter_prefix(cluster: str) -> str:
    """SSM parameter path holding the deploy-time values of ``cluster``."""
    return f"/slurmstack/{cluster}"


def parameter_name(prefix: str, key: DeployParameter | str) -> str:
    """Full SSM parameter name of a deploy-time value, e.g. /slurmstack/llm-train/head/address."""
    return f"{prefix}/{key}"


def munge_secret_name(cluster: str) -> str:
    """The Secrets Manager secret holding the cluster's munge key."""
    return f"slurmstack/{cluster}/munge-key"


def accounting_password_secret_name(cluster: str) -> str:
    """The Secrets Manager secret the stack creates for the accounting database's password
    (the local and rds databases; an external one's is named by the definition)."""
    return f"slurmstack/{cluster}/accounting-db-password"


# --- the config store ------------------------------------------------------------------

# Objects keyed by their content's sha256 under this prefix; the instance roles may read, and
# never write, below it. A role's files travel in bundles (one JSON object of node path ->
# text): the agent's files in one bundle every role shares, the rest of a role's files in one
# bundle of its own, so the number of objects grows with roles, not with files. The manifest,
# named by the CONFIG_MANIFEST parameter, lists each role's files (node path -> the key of the
# file's own content, which the node checks after unpacking) and the bundles that carry them.
CONFIG_PREFIX = "config/"


def store_key(body: bytes) -> str:
    return CONFIG_PREFIX + hashlib.sha256(body).hexdigest()


def matches_key(body: bytes, key: str) -> bool:
    """Whether ``body`` is the content the store key ``key`` names."""
    return hashlib.sha256(body).hexdigest() == key.rsplit("/", 1)[-1]


def _compact_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def bundle_text(files: dict[str, str]) -> str:
    """A bundle as stored: node path -> text, deterministic and compact."""
    return _compact_json(files)


def read_bundle(body: bytes) -> dict[str, bytes]:
    """A bundle's files: node path -> content."""
    files = json.loads(body)
    return {str(path): str(text).encode() for path, text in files.items()}


@dataclass(frozen=True)
class Manifest:
    """The config store's index: role -> node path -> key of the file's content, and role ->
    keys of the bundles that carry the role's files."""

    files: dict[str, dict[str, str]]
    bundles: dict[str, tuple[str, ...]]


def manifest_json(manifest: Manifest) -> str:
    """The manifest as stored: deterministic and compact."""
    bundles = {role: list(keys) for role, keys in manifest.bundles.items()}
    return _compact_json({"bundles": bundles, "files": manifest.files})


def read_manifest(body: bytes) -> Manifest:
    data = json.loads(body)
    bundles = {str(role): tuple(keys) for role, keys in data["bundles"].items()}
    return Manifest(files=data["files"], bundles=bundles)


def is_agent_file(node_path: str) -> bool:
    """Whether a node file belongs to the agent (its launcher and package tree), which every
    role installs alike and the bootstrap installs first."""
    return node_path == AGENT_PATH or node_path.startswith(AGENT_LIB_DIR + "/")


# --- where things land on a node -------------------------------------------------------

# The node agent: its launcher, and the tree it runs (this module and slurmstack/node, as
# the package has them) below AGENT_LIB_DIR.
AGENT_PATH = "/usr/local/bin/slurmstack-node"
AGENT_LIB_DIR = "/usr/local/lib/slurmstack"
AGENT_PACKAGE = "slurmstack"
# The first-boot runner and the markers it leaves; the head's apply-config document reads them.
BOOTSTRAP_PATH = "/usr/local/sbin/slurmstack-bootstrap"
BOOTSTRAP_DONE = "/var/lib/slurmstack/bootstrap.done"
BOOTSTRAP_FAILED = "/var/lib/slurmstack/bootstrap.failed"
# Written by cloud-init (BootstrapEnv), by render (NodeConfig) and by the agent (NodeEnv).
BOOTSTRAP_ENV_PATH = "/etc/slurmstack/bootstrap.env"
NODE_CONFIG_PATH = "/etc/slurmstack/node.json"
NODE_ENV_PATH = "/etc/slurmstack/node.env"
TASK_PROLOG_PATH = "/etc/slurmstack/task-prolog.sh"
IMDS_FIREWALL_RULES_PATH = "/etc/slurmstack/imds-firewall.nft"
SLURM_DIR = "/etc/slurm"
SLURM_CONF_PATH = f"{SLURM_DIR}/slurm.conf"
SLURMD_LOG_PATH = "/var/log/slurm/slurmd.log"  # SlurmdLogFile
SYSTEMD_DIR = "/etc/systemd/system"
NCCL_CONF_PATH = "/etc/nccl.conf"
FABRIC_PROFILE_PATH = "/etc/profile.d/slurmstack-fabric.sh"
ENROOT_CONF_PATH = "/etc/enroot/enroot.conf"

# systemd units slurmstack installs or starts.
SLURMCTLD_UNIT = "slurmctld.service"
MUNGE_UNIT = "munge.service"
SLURMD_UNIT = "slurmstack-slurmd.service"  # a worker's slurmd (dynamic, configless)
DISTRIBUTION_SLURMD_UNIT = "slurmd.service"  # Debian/Ubuntu's own, unused on workers
# The head node's one day-2 loop (slurmstack.node.controller), run by its timer.
CONTROLLER_SERVICE = "slurmstack-controller.service"
CONTROLLER_TIMER = "slurmstack-controller.timer"
LNET_EFA_UNIT = "slurmstack-lustre-efa.service"
IMDS_FIREWALL_UNIT = "slurmstack-imds-firewall.service"
POWER_SERVICE = "slurmstack-power.service"  # the head's sweep of elastic nodes
POWER_TIMER = "slurmstack-power.timer"


def unit_path(unit: str) -> str:
    return f"{SYSTEMD_DIR}/{unit}"


def dropin_path(unit: str, name: str) -> str:
    return f"{SYSTEMD_DIR}/{unit}.d/{name}.conf"


SLURMCTLD_DROPIN_PATH = f"{SYSTEMD_DIR}/{SLURMCTLD_UNIT}.d/slurmstack.conf"

# The head node's Slurm state: an EBS volume attached under STATE_VOLUME_DEVICE (on Nitro it
# appears as an NVMe disk whose controller reports that name), mounted at STATE_VOLUME_MOUNT;
# Slurm's files live in a subdirectory, apart from the file system's root and lost+found.
STATE_VOLUME_DEVICE = "/dev/sdf"
STATE_VOLUME_MOUNT = "/var/spool/slurmctld"
STATE_SAVE_LOCATION = f"{STATE_VOLUME_MOUNT}/state"

# Accounting on the head node. The rendered slurmdbd.conf holds no password: the agent
# (`accounting-db`) writes the live one, 0600 and owned by SlurmUser as slurmdbd demands, from
# it and the secret. slurmdbd's pid file is in its RuntimeDirectory (the 23.11 unit runs it as
# SlurmUser, who cannot write /run itself), its log beside slurmctld's.
ACCOUNTING_CONFIG_PATH = "/etc/slurmstack/accounting.json"  # AccountingConfig, written by render
SLURMDBD_CONF_RENDERED_PATH = "/etc/slurmstack/slurmdbd.conf"
SLURMDBD_CONF_PATH = f"{SLURM_DIR}/slurmdbd.conf"
SLURMDBD_PID_FILE = "/run/slurmdbd/slurmdbd.pid"
SLURMDBD_LOG_FILE = "/var/log/slurm/slurmdbd.log"
SLURMDBD_UNIT = "slurmdbd.service"
SLURMDBD_DROPIN_PATH = f"{SYSTEMD_DIR}/{SLURMDBD_UNIT}.d/slurmstack.conf"
# The local database: Debian's and Ubuntu's MariaDB. Its settings sort after their
# 50-server.cnf (so its datadir wins); its socket is theirs, which slurmdbd's "localhost"
# reaches too (MariaDB's client library default).
MARIADB_UNIT = "mariadb.service"
MARIADB_DROPIN_PATH = f"{SYSTEMD_DIR}/{MARIADB_UNIT}.d/slurmstack.conf"
MARIADB_CONF_PATH = "/etc/mysql/mariadb.conf.d/90-slurmstack.cnf"
MARIADB_SOCKET = "/run/mysqld/mysqld.sock"
# On the state volume, which outlives the instance: a replacement head mounts it and finds
# the database, and the record of what slurmstack created in it (accounting-apply), as they were.
MARIADB_DATA_DIR = f"{STATE_VOLUME_MOUNT}/mariadb"
ACCOUNTING_OWNED_PATH = f"{STATE_VOLUME_MOUNT}/slurmstack/accounting-owned.json"

# --- the agent's subcommands, as units, cloud-init and SSM documents call them -------------


class Command(enum.StrEnum):
    """``slurmstack-node`` subcommands (slurmstack.node.commands maps each to its handler)."""

    SYNC_CONFIG = "sync-config"
    PARAMS = "params"
    HEAD_ADDRESS = "head-address"
    MUNGE_KEY = "munge-key"
    HEALTH = "health"
    SCRATCH = "scratch"
    MOUNTS = "mounts"
    LNET_EFA = "lnet-efa"
    STATE_VOLUME = "state-volume"
    REAP = "reap"
    POWER_RESUME = "power-resume"
    POWER_SUSPEND = "power-suspend"
    POWER_RESUME_FAIL = "power-resume-fail"
    POWER_SWEEP = "power-sweep"
    HEALTH_CHECK = "health-check"
    SHIP_LOGS = "ship-logs"
    CONTROL = "control"
    BREAKER = "breaker"
    ACCOUNTING_DB = "accounting-db"
    ACCOUNTING_APPLY = "accounting-apply"
    USAGE = "usage"
    # Jobs, containers and acceptance (slurmstack.node.workload).
    NODE_CHECK = "node-check"
    NCCL_VERDICT = "nccl-verdict"
    ACCEPT = "accept"
    JOB_DIRS = "job-dirs"
    ECR_TOKEN = "ecr-token"
    ECR_LOGIN = "ecr-login"
    # Rollouts and permissions (slurmstack.node.join_hook, slurmstack.node.power.launch_check).
    JOINED = "joined"
    LAUNCH_CHECK = "launch-check"
    PRUNE_IMAGES = "prune-images"


def agent_command(command: Command, *args: str) -> str:
    """The command line that runs ``command`` by the agent's absolute path (systemd units and
    Run Command do not search the login PATH)."""
    return " ".join((AGENT_PATH, command.value, *args))


# The controller's reaping: how long a dead node's record stays DOWN before it is deleted (long
# enough for a reboot, which keeps the address and so the name).
REAPER_GRACE_SECONDS = 900
# How often the controller's timer runs it: a node whose instance is gone is set DOWN (its jobs
# requeued) within this, and a terminating instance's lifecycle action is looked at this often.
CONTROLLER_INTERVAL_SECONDS = 60


# --- Slurm's power saving (elastic nodes) ----------------------------------------------------

# The programs slurmctld runs (ResumeProgram, SuspendProgram, ResumeFailProgram): one-line
# launchers of the agent's power-* subcommands, as slurmctld passes a program no arguments
# of its own and wants an absolute path that only its owner may write.
RESUME_PROGRAM = "/usr/local/bin/slurmstack-resume"
SUSPEND_PROGRAM = "/usr/local/bin/slurmstack-suspend"
RESUME_FAIL_PROGRAM = "/usr/local/bin/slurmstack-resume-fail"
POWER_PROGRAMS = {
    RESUME_PROGRAM: Command.POWER_RESUME,
    SUSPEND_PROGRAM: Command.POWER_SUSPEND,
    RESUME_FAIL_PROGRAM: Command.POWER_RESUME_FAIL,
}
# slurmctld runs them as SlurmUser with nothing but SLURM_CONF in their environment: they log
# next to slurmctld's own log (a directory SlurmUser writes), keep the pools' launch retry
# state in slurmctld's state directory (SlurmUser's, on the state volume), and take extra
# environment (an HTTPS proxy, an EC2 endpoint) from POWER_ENV_PATH, when it exists.
POWER_LOG_PATH = "/var/log/slurm/slurmstack-power.log"
POWER_STATE_PATH = f"{STATE_SAVE_LOCATION}/slurmstack-power.json"
POWER_ENV_PATH = "/etc/slurmstack/power.env"
# An elastic node's slurmd is a CLOUD node's (slurmd -N <name>, no -Z): this drop-in, sent to
# every node of an elastic pool, is put in place by `params` on the elastic instances only.
SLURMD_ELASTIC_DROPIN_SOURCE = "/etc/slurmstack/slurmd-elastic.conf"
SLURMD_ELASTIC_DROPIN_PATH = dropin_path(SLURMD_UNIT, "elastic")
# How often the head's sweep runs (slurmstack-power.timer): it returns elastic nodes to
# service once their pool's launch retry is due and terminates instances no node owns.
POWER_SWEEP_INTERVAL_SECONDS = 60
# After a failed launch a pool waits LAUNCH_RETRY_SECONDS, doubled after each further failure
# up to LAUNCH_RETRY_MAX_SECONDS, before its nodes are offered to Slurm again.
LAUNCH_RETRY_SECONDS = 120
LAUNCH_RETRY_MAX_SECONDS = 1800

# --- bootstrap.env ----------------------------------------------------------------------

ENV_PREFIX = "SLURMSTACK_"


def env_key(name: str) -> str:
    """The variable of a BootstrapEnv or NodeEnv field, e.g. SLURMSTACK_HEAD_ADDRESS."""
    return ENV_PREFIX + name.upper()


def parse_env(text: str) -> dict[str, str]:
    """KEY=value lines, comments skipped (also run by the first-boot script: kept short)."""
    pairs = [line.split("=", 1) for line in text.splitlines() if "=" in line]
    return {k.strip(): v.strip() for k, v in pairs if not k.lstrip().startswith("#")}


@dataclass(frozen=True)
class BootstrapEnv:
    """Who the node is: the stable identifiers in its cloud-init document (BOOTSTRAP_ENV_PATH),
    the same for every node of a role."""

    cluster: str
    region: str
    role: str
    parameter_prefix: str
    munge_secret: str
    manifest_parameter: str
    bucket_parameter: str


def bootstrap_env_text(env: BootstrapEnv) -> str:
    return "".join(f"{env_key(f.name)}={getattr(env, f.name)}\n" for f in fields(env))


def read_bootstrap_env(text: str) -> BootstrapEnv:
    """The node's BootstrapEnv; KeyError names a missing variable."""
    values = parse_env(text)
    return BootstrapEnv(**{f.name: values[env_key(f.name)] for f in fields(BootstrapEnv)})


# --- node.env ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeEnv:
    """What the agent learns at boot (NODE_ENV_PATH); slurmd's unit reads it as its
    EnvironmentFile (head_address, node_name). Empty fields are not written."""

    instance_id: str = ""
    address: str = ""
    head_address: str = ""
    node_name: str = ""
    efs_id: str = ""
    lustre_dns: str = ""
    lustre_mount_name: str = ""

    def text(self) -> str:
        values = {env_key(f.name): getattr(self, f.name) for f in fields(self)}
        return "".join(f"{k}={v}\n" for k, v in sorted(values.items()) if v)


def read_node_env(text: str) -> NodeEnv:
    values = parse_env(text)
    return NodeEnv(**{f.name: values.get(env_key(f.name), "") for f in fields(NodeEnv)})


def env_ref(name: str) -> str:
    """``${SLURMSTACK_<NAME>}``: a NodeEnv field as a systemd unit expands it."""
    if name not in {f.name for f in fields(NodeEnv)}:
        raise KeyError(f"NodeEnv has no field {name!r}")
    return "${" + env_key(name) + "}"


# --- node.json ---------------------------------------------------------------------------


class MountKind(enum.StrEnum):
    NVME_RAID0 = "nvme-raid0"
    LUSTRE = "lustre"
    EFS = "efs"


@dataclass(frozen=True)
class Mount:
    kind: MountKind
    path: str


@dataclass(frozen=True)
class StateVolume:
    device_name: str
    mount: str
    state_dir: str


@dataclass(frozen=True)
class PoolRef:
    """A pool as the head node's controller knows it: its nodes' names and feature, its Auto
    Scaling group, and how its capacity is bought (a Capacity Block's end drains its nodes)."""

    name: str
    node_name_prefix: str
    feature: str
    group: str = ""
    capacity_type: str = "on_demand"
    reservation_id: str = ""


@dataclass(frozen=True)
class ElasticPool:
    """A pool's elastic part as the head node's power programs know it: its CLOUD nodes and
    how to launch an instance for one of them (the pool's own launch template, into the
    compute subnet, bought as the pool's capacity type says)."""

    name: str
    node_names: str  # hostlist of the pool's CLOUD nodes, e.g. gpu-e[1-8]
    nodes: int
    launch_template: str
    instance_type: str
    capacity: str  # the definition's capacity type: on_demand, spot, capacity_block, ...
    placement_group: str | None = None  # the cluster placement group the nodes launch into
    max_spot_price: str | None = None
    tags: tuple[tuple[str, str], ...] = ()  # the pool's instance tags (ELASTIC_TAG added)


@dataclass(frozen=True)
class LaunchRetry:
    """How long a pool waits after a failed launch before its nodes are offered again."""

    first_seconds: int = LAUNCH_RETRY_SECONDS
    max_seconds: int = LAUNCH_RETRY_MAX_SECONDS

    def delay(self, failures: int) -> int:
        """The wait after the ``failures``-th failure in a row (from 1): doubling, capped."""
        return int(min(self.first_seconds * 2 ** max(failures - 1, 0), self.max_seconds))


@dataclass(frozen=True)
class Scratch:
    mount: str


@dataclass(frozen=True)
class Health:
    """What a node of the pool checks (slurmstack.node.health): the devices it must have, the
    XIDs that drain it, when a volume counts as full, and whether its first boot runs the deep
    GPU diagnostic."""

    gpus: int = 0
    neuron_devices: int = 0
    efa_devices: int = 0
    critical_xids: tuple[int, ...] = ()
    disk_full_percent: int = 95
    deep_diagnostic: bool = False


@dataclass(frozen=True)
class NodeConfig:
    """What the node agent knows about its role (NODE_CONFIG_PATH), written by render.
    Head-only fields (state_volume, pools) and pool-only fields (node_name_prefix, scratch,
    health, lustre_efa_interfaces) are left out of the file on the other role."""

    cluster: str
    region: str
    role: str
    parameter_prefix: str
    munge_secret: str
    mounts: tuple[Mount, ...]  # shared file systems (local scratch is ``scratch``)
    # The head node.
    state_volume: StateVolume | None = None
    elastic_pools: tuple[ElasticPool, ...] = ()  # what the power programs launch
    launch_retry: LaunchRetry = field(default_factory=LaunchRetry)
    pools: tuple[PoolRef, ...] = ()  # the pools whose nodes the controller looks after
    repair: RepairPolicy | None = None  # the controller's policy
    # A pool's node.
    node_name_prefix: str = ""
    elastic: bool = False  # the pool has elastic nodes: an instance may be one of them
    scratch: Scratch | None = None
    health: Health = field(default_factory=Health)
    # EFA interfaces LNet uses for Lustre; 0: over TCP; None: the cluster has no Lustre.
    lustre_efa_interfaces: int | None = None

    @property
    def is_head(self) -> bool:
        return self.role == HEAD_ROLE


GENERATED_BY = "slurmstack"


def node_config_json(config: NodeConfig) -> str:
    """node.json as render writes it (sorted keys, two-space indent)."""
    data: dict[str, Any] = {
        "generated_by": GENERATED_BY,
        "cluster": config.cluster,
        "region": config.region,
        "role": config.role,
        "parameter_prefix": config.parameter_prefix,
        "munge_secret": config.munge_secret,
        "mounts": [{"kind": m.kind.value, "path": m.path} for m in config.mounts],
    }
    if config.is_head:
        volume = config.state_volume
        data["state_volume"] = None if volume is None else vars(volume).copy()
        data["pools"] = [vars(p).copy() for p in config.pools]
        if config.elastic_pools:
            data["elastic_pools"] = [_elastic_json(p) for p in config.elastic_pools]
            data["launch_retry"] = vars(config.launch_retry).copy()
        data["repair"] = None if config.repair is None else repair_policy_data(config.repair)
    else:
        data["node_name_prefix"] = config.node_name_prefix
        if config.elastic:
            data["elastic"] = True
        data["scratch"] = None if config.scratch is None else {"mount": config.scratch.mount}
        health = vars(config.health).copy()
        health["critical_xids"] = list(config.health.critical_xids)
        data["health"] = health
        if config.lustre_efa_interfaces is not None:
            data["lustre_efa_interfaces"] = config.lustre_efa_interfaces
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _elastic_json(pool: ElasticPool) -> dict[str, Any]:
    data = vars(pool).copy()
    data["tags"] = dict(pool.tags)
    return data


def _elastic_pool(data: dict[str, Any]) -> ElasticPool:
    return ElasticPool(**{**data, "tags": tuple(sorted(data.get("tags", {}).items()))})


def read_node_config(text: str) -> NodeConfig:
    """The NodeConfig of a node.json (ValueError or KeyError for a malformed one)."""
    data = json.loads(text)
    volume = data.get("state_volume")
    scratch = data.get("scratch")
    health = dict(data.get("health") or {})
    health["critical_xids"] = tuple(health.get("critical_xids") or ())
    repair = data.get("repair")
    return NodeConfig(
        cluster=str(data["cluster"]),
        region=str(data["region"]),
        role=str(data["role"]),
        parameter_prefix=str(data["parameter_prefix"]),
        munge_secret=str(data["munge_secret"]),
        mounts=tuple(Mount(MountKind(m["kind"]), str(m["path"])) for m in data["mounts"]),
        state_volume=StateVolume(**volume) if volume else None,
        pools=tuple(PoolRef(**p) for p in data.get("pools") or ()),
        elastic_pools=tuple(_elastic_pool(p) for p in data.get("elastic_pools") or ()),
        launch_retry=LaunchRetry(**(data.get("launch_retry") or {})),
        node_name_prefix=str(data.get("node_name_prefix") or ""),
        elastic=bool(data.get("elastic", False)),
        scratch=Scratch(str(scratch["mount"])) if scratch else None,
        health=Health(**health),
        repair=read_repair_policy(repair) if repair else None,
        lustre_efa_interfaces=data.get("lustre_efa_interfaces"),
    )


# --- accounting.json ----------------------------------------------------------------------


# Slurm's own objects: the root of every cluster's association tree, and the QoS slurmdbd
# creates. slurmstack never creates, changes or removes them.
ROOT_ACCOUNT = "root"
DEFAULT_QOS = "normal"


class DatabaseType(enum.StrEnum):
    """Where slurmdbd keeps its records (slurm.accounting.database.type)."""

    LOCAL = "local"  # MariaDB on the head node, its data on the state volume
    EXTERNAL = "external"  # a MySQL-compatible server the user runs
    RDS = "rds"  # an RDS for MariaDB instance the stack creates


@dataclass(frozen=True)
class AccountingDatabase:
    type: DatabaseType
    host: str | None  # None: the ACCOUNTING_DB_HOST parameter, at boot (rds)
    port: int
    name: str
    user: str
    password_secret: str  # Secrets Manager name or ARN

    @property
    def local(self) -> bool:
        return self.type is DatabaseType.LOCAL


@dataclass(frozen=True)
class AccountingQos:
    name: str
    description: str
    priority: int
    max_wall_minutes: int | None
    max_jobs_per_user: int | None
    max_tres_per_user: dict[str, int]  # TRES name -> limit (mem in MiB)
    max_tres_per_job: dict[str, int]
    grp_tres: dict[str, int]


@dataclass(frozen=True)
class AccountingAccount:
    """An account as sacctmgr shows its association: qos and default_qos are the effective ones
    (an account without its own has its parent's)."""

    name: str
    description: str
    parent: str
    fairshare: int
    qos: tuple[str, ...]
    default_qos: str | None
    grp_tres: dict[str, int]


@dataclass(frozen=True)
class AccountingUser:
    name: str
    default_account: str
    accounts: tuple[str, ...]  # the default first


@dataclass(frozen=True)
class PoolPrice:
    """What the usage report charges for a pool's nodes."""

    name: str
    instance_type: str
    usd_per_hour: float | None  # None: no price known (left out of costs, and said so)
    price_source: str
    gpus: int  # accelerators per node
    cpus: int  # per node


@dataclass(frozen=True)
class AccountingConfig:
    """What the head node's agent knows about accounting (ACCOUNTING_CONFIG_PATH), written by
    render for every head, so the agent also learns that accounting is off. Accounts come
    parents first (sacctmgr adds a child under an existing parent)."""

    cluster: str
    enabled: bool
    slurmdbd_port: int = SLURMDBD_PORT
    database: AccountingDatabase | None = None
    qos: tuple[AccountingQos, ...] = ()
    accounts: tuple[AccountingAccount, ...] = ()
    users: tuple[AccountingUser, ...] = ()
    pools: tuple[PoolPrice, ...] = ()


def accounting_config_json(config: AccountingConfig) -> str:
    """accounting.json as render writes it (sorted keys, two-space indent)."""
    data: dict[str, Any] = {
        "generated_by": GENERATED_BY,
        "cluster": config.cluster,
        "enabled": config.enabled,
    }
    if config.enabled:
        database = None if config.database is None else vars(config.database).copy()
        data.update(
            slurmdbd_port=config.slurmdbd_port,
            database=database,
            qos=[vars(q) for q in config.qos],
            accounts=[{**vars(a), "qos": list(a.qos)} for a in config.accounts],
            users=[{**vars(u), "accounts": list(u.accounts)} for u in config.users],
            pools=[vars(p) for p in config.pools],
        )
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def read_accounting_config(text: str) -> AccountingConfig:
    """The AccountingConfig of an accounting.json (ValueError or KeyError for a malformed one)."""
    data = json.loads(text)
    if not data["enabled"]:
        return AccountingConfig(cluster=str(data["cluster"]), enabled=False)
    db = data.get("database")
    return AccountingConfig(
        cluster=str(data["cluster"]),
        enabled=True,
        slurmdbd_port=int(data["slurmdbd_port"]),
        database=None
        if db is None
        else AccountingDatabase(**{**db, "type": DatabaseType(db["type"])}),
        qos=tuple(AccountingQos(**q) for q in data["qos"]),
        accounts=tuple(
            AccountingAccount(**{**a, "qos": tuple(a["qos"])}) for a in data["accounts"]
        ),
        users=tuple(
            AccountingUser(**{**u, "accounts": tuple(u["accounts"])}) for u in data["users"]
        ),
        pools=tuple(PoolPrice(**p) for p in data["pools"]),
    )


# --- day 2: health checks, repair, logs ---------------------------------------------------

# Every reason slurmstack gives a node has one form, `slurmstack:<check>: <detail>`: the node's
# health check drains with it, the head's controller reads it (and writes its own the same way).
REASON_PREFIX = "slurmstack:"
# The separator after <check> is ": "; a bare ":" is read too ("slurmstack:gpu-xid:79 ...").
_REASON = re.compile(r"^slurmstack:(?P<check>[a-z][a-z0-9-]*):\s?(?P<detail>.*)$", re.DOTALL)


class Check(enum.StrEnum):
    """The <check> of a slurmstack reason: what was found, and by whom."""

    # Found on the node (slurmstack.node.health), at boot or by Slurm's HealthCheckProgram.
    GPU_COUNT = "gpu-count"  # fewer GPU device files than the instance type has
    GPU_SMI = "gpu-smi"  # nvidia-smi does not answer, or not for every GPU
    GPU_ECC = "gpu-ecc"  # uncorrectable ECC errors, or pages/rows waiting for a GPU reset
    GPU_XID = "gpu-xid"  # a critical XID in the kernel log; the detail starts with its number
    GPU_LOST = "gpu-lost"  # the driver says a GPU fell off the bus, without an XID
    NVSWITCH_SXID = "nvswitch-sxid"  # a fatal NVSwitch SXid in the kernel log
    GPU_DIAG = "gpu-diag"  # DCGM's diagnostic (dcgmi diag) failed at the instance's first boot
    NEURON_COUNT = "neuron-count"
    EFA_COUNT = "efa-count"
    EFA_PORT = "efa-port"  # an EFA port that is not ACTIVE
    FILE_SYSTEM = "file-system"  # a shared file system does not answer in time
    DISK_FULL = "disk-full"  # the root volume or scratch nearly full
    SPOT_INTERRUPTION = "spot-interruption"  # EC2's two-minute notice (instance metadata)
    # Found by the head node's controller (slurmstack.node.controller).
    CAPACITY_BLOCK_END = "capacity-block-end"
    SCALE_IN = "scale-in"  # the Auto Scaling group is terminating the instance
    INSTANCE_GONE = "instance-gone"  # no live instance of the cluster at the node's address
    OPERATOR = "operator"  # an operator's Action:Replace / Action:Reboot, being carried out


def reason(check: Check, detail: str) -> str:
    """A reason in slurmstack's one form (Slurm keeps it on one line)."""
    return f"{REASON_PREFIX}{check.value}: {' '.join(detail.split())}"


def parse_reason(text: str) -> tuple[str, str] | None:
    """(check, detail) of a slurmstack reason; None for any other text."""
    match = _REASON.match(text.strip())
    return (match["check"], match["detail"]) if match else None


# What an operator asks for in a node's reason, as SageMaker HyperPod users write it
# (`scontrol update node=X state=drain reason="Action:Replace"`).
OPERATOR_ACTION = re.compile(r"\bAction:(Replace|Reboot)\b")


class Remedy(enum.StrEnum):
    """What the controller does about a cause (slurmstack.plan.health holds the table)."""

    REBOOT = "reboot"  # scontrol reboot ASAP nextstate=RESUME: after the node's jobs end
    REPLACE = "replace"  # the node DOWN (its jobs requeued), its instance Unhealthy in its group
    LEAVE = "leave"  # nothing: the reason stays for an operator


def cause_of(check: str, detail: str) -> str:
    """The key the repair table is written in: the check, and for an XID its number
    (``gpu-xid:79``)."""
    if check == Check.GPU_XID:
        number = detail.split(" ", 1)[0].strip(",:")
        if number.isdigit():
            return f"{check}:{int(number)}"
    return check


# Slurm's own reasons, as causes in the repair table (slurmctld's and slurmd's texts).
SLURM_CAUSE_PREFIX = "slurm:"
# An operator's request, as a cause.
OPERATOR_CAUSE_PREFIX = "Action:"


@dataclass(frozen=True)
class RepairRule:
    cause: str  # a check (``gpu-count``), an XID (``gpu-xid:79``), ``slurm:<reason>``, ``Action:X``
    remedy: Remedy


@dataclass(frozen=True)
class RepairPolicy:
    """The head controller's policy, rendered from the definition into the head's node.json."""

    rules: tuple[RepairRule, ...] = ()
    # The circuit breaker: at most this many replacements per pool in this many minutes; then
    # the pool's automatic replacement stops until an operator resets it.
    breaker_replacements: int = 3
    breaker_window_minutes: int = 60
    # A cause that comes back within this after the controller rebooted the node: replace.
    reboot_window_minutes: int = 1440
    # A Capacity Block's nodes are drained this long before EC2 starts terminating them.
    capacity_block_drain_minutes: int = 60
    # How long a terminating instance (scale-in, refresh, replacement) waits for its jobs.
    scale_in_wait_minutes: int = 120
    # How long it waits, once idle, for the node to copy its logs to the bucket.
    logs_wait_minutes: int = 5

    def remedy(self, cause: str) -> Remedy | None:
        for rule in self.rules:
            if rule.cause == cause:
                return rule.remedy
        return None


def repair_policy_data(policy: RepairPolicy) -> dict[str, Any]:
    data = {f.name: getattr(policy, f.name) for f in fields(policy) if f.name != "rules"}
    data["rules"] = [{"cause": r.cause, "remedy": r.remedy.value} for r in policy.rules]
    return data


def read_repair_policy(data: dict[str, Any]) -> RepairPolicy:
    values = {k: v for k, v in data.items() if k != "rules"}
    rules = tuple(RepairRule(str(r["cause"]), Remedy(r["remedy"])) for r in data["rules"])
    return RepairPolicy(rules=rules, **values)


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

# Slurm's HealthCheckProgram: run by slurmd with no arguments and no PATH, only
# SLURMD_NODENAME in its environment, killed after 60 s (slurmd.c, run_script_health_check).
HEALTH_CHECK_PROGRAM = "/usr/local/sbin/slurmstack-health-check"
# DCGM's level-2 diagnostic at an instance's first boot, bounded (slurmd's unit gives its
# ExecStartPre this and more).
DEEP_DIAGNOSTIC_SECONDS = 1200
# slurmctld's `scontrol reboot` runs this on the node (Ubuntu's systemd reboot).
REBOOT_PROGRAM = "/usr/sbin/reboot"
# A node's health state: the kernel log position already read, the deep diagnostic's pass.
HEALTH_DIR = "/var/lib/slurmstack/health"
# Where the node reads XIDs: the kernel's log records, each with a sequence number.
KERNEL_LOG_PATH = "/dev/kmsg"
LOG_DIR = "/var/log/slurmstack"
HEALTH_LOG_PATH = f"{LOG_DIR}/health.log"  # every check's findings, on the node
CONTROLLER_LOG_PATH = f"{LOG_DIR}/controller.log"  # every decision and action, on the head
# What an operator must hear about (a pool the head may not launch, ...): JSON lines
# (slurmstack.node.events).
EVENTS_LOG_PATH = f"{LOG_DIR}/events.log"
# The controller's memory (replacements per pool, the breakers, reboots it issued): on the
# head's state volume, so a replaced head keeps it.
CONTROLLER_STATE_PATH = f"{STATE_VOLUME_MOUNT}/slurmstack/controller.json"
CLOUD_INIT_OUTPUT_PATH = "/var/log/cloud-init-output.log"

# Logs outlive instances: a node copies these to the cluster bucket (when a check fails, when
# its boot fails, when its instance starts terminating) under its own prefix, which its role
# may write and nothing else. IAM can name a node's own prefix only through the policy
# variable ec2:SourceInstanceARN, so the prefix holds the instance's ARN (its last element is
# the instance id): logs/<pool>/arn:aws:ec2:<region>:<account>:instance/<id>/.
LOGS_PREFIX = "logs/"
SHIPPED_LOGS = (
    CLOUD_INIT_OUTPUT_PATH,
    BOOTSTRAP_FAILED,
    HEALTH_LOG_PATH,
    SLURMD_LOG_PATH,
    EVENTS_LOG_PATH,
)
LOGS_SHIPPED_MARKER = "shipped.json"  # written last: the head waits for it


def partition(region: str) -> str:
    """The AWS partition of a region (ARNs depend on it)."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def instance_arn(region: str, account: str, instance_id: str) -> str:
    return f"arn:{partition(region)}:ec2:{region}:{account}:instance/{instance_id}"


def log_prefix(pool: str, arn: str) -> str:
    """The bucket prefix of one instance's logs (see LOGS_PREFIX)."""
    return f"{LOGS_PREFIX}{pool}/{arn}/"


# --- the node image ----------------------------------------------------------------------


# What a node's image must hold, as items ``KIND:NAME``: ``cmd:NAME`` an executable in one of
# COMMAND_DIRS, ``file:PATH`` a file, ``py:MODULE`` importable by the system python3. The plan
# lists a role's items (slurmstack.plan.images); the first-boot script's ``check`` step checks
# them before anything else runs, and the image's test phase runs that same check.
class ImageItem(enum.StrEnum):
    COMMAND = "cmd"
    FILE = "file"
    MODULE = "py"


def image_item(kind: ImageItem, name: str) -> str:
    return f"{kind.value}:{name}"


# Where ``cmd:`` items are looked for: the PATH of runcmd and of systemd units.
COMMAND_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
# Where `make install` of pyxis puts its SPANK plugin: the image bakes it there, plugstack.conf
# loads it.
PYXIS_PLUGIN = "/usr/local/lib/slurm/spank_pyxis.so"
# The build's record inside the image: every version baked (the test phase and operators read it).
IMAGE_MANIFEST_PATH = "/etc/slurmstack/image.json"
# The mount helper of each shared file system's client (amazon-efs-utils, the Lustre client):
# in the image; the agent's mounts step refuses to start without it.
MOUNT_HELPERS = {MountKind.EFS: "mount.efs", MountKind.LUSTRE: "mount.lustre"}


def _commands(*names: str) -> tuple[str, ...]:
    return tuple(image_item(ImageItem.COMMAND, name) for name in names)


# Every node: munge, the Slurm client, the metadata firewall's nft, the agent's boto3.
IMAGE_BASE_ITEMS = (*_commands("munged", "scontrol", "nft"), image_item(ImageItem.MODULE, "boto3"))
IMAGE_HEAD_ITEMS = _commands("slurmctld")
IMAGE_WORKER_ITEMS = (
    *_commands("slurmd", "srun", "enroot"),
    image_item(ImageItem.FILE, PYXIS_PLUGIN),
)
IMAGE_SCRATCH_ITEMS = _commands("mdadm", "mkfs.ext4")  # the scratch step's RAID0 and file system
# Accounting on the head (slurm.accounting): slurmdbd and Slurm's accounting clients, and
# for the local database MariaDB's server, client and installer (the agent's accounting-db
# runs them). The head's boot checks them only when its definition turns them on.
ACCOUNTING_COMMANDS = ("slurmdbd", "sacctmgr", "sacct")
LOCAL_DATABASE_COMMANDS = ("mariadbd", "mariadb", "mariadb-install-db")
IMAGE_ACCOUNTING_ITEMS = _commands(*ACCOUNTING_COMMANDS)
IMAGE_LOCAL_DATABASE_ITEMS = _commands(*LOCAL_DATABASE_COMMANDS)
IMAGE_MOUNT_ITEMS = {
    MountKind.EFS: _commands(MOUNT_HELPERS[MountKind.EFS]),
    MountKind.LUSTRE: _commands(MOUNT_HELPERS[MountKind.LUSTRE], "lctl"),
}

# The build: bundles in the cluster bucket under IMAGE_PREFIX (read by the image build role
# only, never by nodes), fetched to IMAGE_BUNDLE_DIR on the build and test instances.
IMAGE_PREFIX = "images/"
IMAGE_BUNDLE_DIR = "/var/lib/slurmstack/image/bundle"


# --- jobs, containers, acceptance ---------------------------------------------------------

# Drain reasons have one form everywhere: ``slurmstack:<check>: <detail>`` (the operator reads
# it in `sinfo -R`; the head's controller maps <check> to an action).
DRAIN_REASON_PREFIX = "slurmstack:"


def drain_reason(check: str, detail: str) -> str:
    """The Slurm reason of a node slurmstack drains, e.g.
    ``slurmstack:nccl-allreduce: 142 GB/s busbw, below 355 (pair with train-1811)``."""
    return f"{DRAIN_REASON_PREFIX}{check}: {detail}"


# The ready-to-run jobs, rendered per cluster (slurmstack.render.jobs) and installed on every
# node from the config store: one directory per pool, the programs they run in lib/, and
# acceptance.json (the pools' expectations: GPUs, EFA devices, mounts, all-reduce threshold).
# Under /usr/local like the agent: every node has it at the same path, so a job's steps find
# the programs wherever they run, and no shared file system is needed for them.
JOBS_DIR = "/usr/local/share/slurmstack/jobs"
JOBS_LIB_DIR = f"{JOBS_DIR}/lib"
ACCEPTANCE_PATH = f"{JOBS_DIR}/acceptance.json"
# Commands for users (launchers of the agent's subcommands).
ACCEPT_PATH = "/usr/local/bin/slurmstack-accept"
ECR_LOGIN_PATH = "/usr/local/bin/slurmstack-ecr-login"
# nccl-tests, baked into the NVIDIA images (templates/image/build.sh).
NCCL_TESTS_DIR = "/usr/local/libexec/nccl-tests"
# Checkpoints of the example jobs on the shared file system: <mount>/CHECKPOINTS_DIR_NAME, made
# world-writable and sticky (like /tmp) by the head's `job-dirs` step.
CHECKPOINTS_DIR_NAME = "checkpoints"
# The account's ECR: a root timer on every node keeps a pull token here (the registry's host
# and its password, readable by job users, who cannot reach the instance role); a user's
# enroot reads it through the line `slurmstack-ecr-login` adds to their enroot credentials.
ECR_TOKEN_DIR = "/run/slurmstack/ecr"
ECR_REGISTRY_FILE = f"{ECR_TOKEN_DIR}/registry"
ECR_PASSWORD_FILE = f"{ECR_TOKEN_DIR}/password"
ECR_TOKEN_SERVICE = "slurmstack-ecr-token.service"
ECR_TOKEN_TIMER = "slurmstack-ecr-token.timer"
# ECR tokens last 12 hours (ECR API reference, GetAuthorizationToken); renewed at half that.
ECR_TOKEN_REFRESH_HOURS = 6
# enroot's directories (enroot.conf): each user's runtime directory below ENROOT_RUNTIME_DIR,
# and their images, layer cache and temporary files below the container root's subdirectories,
# all made world-writable and sticky before every slurmd start (`job-dirs`): enroot creates a
# directory per user in them itself.
ENROOT_RUNTIME_DIR = "/run/enroot"
ENROOT_SUBDIRS = ("data", "cache", "tmp")


def container_root(scratch_mount: str | None) -> str:
    """Where enroot keeps images and unpacked containers: large and node-local, so on the
    NVMe scratch when the pool has it, else on the root volume."""
    return f"{scratch_mount}/enroot" if scratch_mount else "/var/lib/enroot"


class Collective(enum.StrEnum):
    """How acceptance tests a pool's fabric."""

    NCCL = "nccl"  # nccl-tests all_reduce_perf, judged against a bus-bandwidth threshold
    MPI = "mpi"  # an MPI all-reduce across the nodes, judged by its result
    NONE = "none"  # nothing slurmstack can run (Neuron: nccom-test is the Neuron SDK's)


@dataclass(frozen=True)
class AllReduceThreshold:
    """The least bus bandwidth (GB/s) all_reduce_perf must reach at ``message_bytes``, and how
    the figure was arrived at (its published source, or the derivation)."""

    min_busbw_gbps: float
    message_bytes: int
    basis: str


@dataclass(frozen=True)
class PoolAcceptance:
    """What acceptance expects of a node of one pool, and how it tests the pool."""

    pool: str
    partition: str
    instance_type: str
    nodes: int
    gpus_per_node: int
    efa_devices: int
    mounts: tuple[str, ...]  # shared file systems and local scratch, each a mount point
    env: tuple[tuple[str, str], ...]  # NCCL/libfabric variables a task sees (name, value)
    collective: Collective
    threshold: AllReduceThreshold | None = None
    allreduce_args: tuple[str, ...] = ()  # all_reduce_perf's arguments (NCCL pools)
    mpi_bin: str = ""  # where the pool's MPI compiler is, when not on the default PATH


@dataclass(frozen=True)
class Acceptance:
    cluster: str
    pools: tuple[PoolAcceptance, ...]

    def pool(self, name: str) -> PoolAcceptance:
        for pool in self.pools:
            if pool.pool == name:
                return pool
        raise KeyError(name)


def acceptance_json(acceptance: Acceptance) -> str:
    """acceptance.json as render writes it (sorted keys, two-space indent)."""
    pools = []
    for pool in acceptance.pools:
        data: dict[str, Any] = {f.name: getattr(pool, f.name) for f in fields(pool)}
        data["mounts"] = list(pool.mounts)
        data["env"] = [list(pair) for pair in pool.env]
        data["allreduce_args"] = list(pool.allreduce_args)
        data["collective"] = pool.collective.value
        data["threshold"] = None if pool.threshold is None else vars(pool.threshold).copy()
        pools.append(data)
    document = {"generated_by": GENERATED_BY, "cluster": acceptance.cluster, "pools": pools}
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def read_acceptance(text: str) -> Acceptance:
    """The Acceptance of an acceptance.json (ValueError or KeyError for a malformed one)."""
    data = json.loads(text)
    pools = []
    for pool in data["pools"]:
        threshold = pool.get("threshold")
        pools.append(
            PoolAcceptance(
                pool=str(pool["pool"]),
                partition=str(pool["partition"]),
                instance_type=str(pool["instance_type"]),
                nodes=int(pool["nodes"]),
                gpus_per_node=int(pool["gpus_per_node"]),
                efa_devices=int(pool["efa_devices"]),
                mounts=tuple(str(m) for m in pool["mounts"]),
                env=tuple((str(k), str(v)) for k, v in pool["env"]),
                collective=Collective(pool["collective"]),
                threshold=AllReduceThreshold(**threshold) if threshold else None,
                allreduce_args=tuple(str(a) for a in pool.get("allreduce_args") or ()),
                mpi_bin=str(pool.get("mpi_bin") or ""),
            )
        )
    return Acceptance(cluster=str(data["cluster"]), pools=tuple(pools))
