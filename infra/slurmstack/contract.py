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


def parameter_prefix(cluster: str) -> str:
    """SSM parameter path holding the deploy-time values of ``cluster``."""
    return f"/slurmstack/{cluster}"


def parameter_name(prefix: str, key: DeployParameter | str) -> str:
    """Full SSM parameter name of a deploy-time value, e.g. /slurmstack/llm-train/head/address."""
    return f"{prefix}/{key}"


def munge_secret_name(cluster: str) -> str:
    """The Secrets Manager secret holding the cluster's munge key."""
    return f"slurmstack/{cluster}/munge-key"


# --- the config store ------------------------------------------------------------------

# Rendered files are S3 objects keyed by their content's sha256 under this prefix; the
# manifest (role -> node path -> key) is one such object, named by the CONFIG_MANIFEST
# parameter. The instance roles may read, and never write, below it.
CONFIG_PREFIX = "config/"


def store_key(body: bytes) -> str:
    return CONFIG_PREFIX + hashlib.sha256(body).hexdigest()


def matches_key(body: bytes, key: str) -> bool:
    """Whether ``body`` is the content the store key ``key`` names."""
    return hashlib.sha256(body).hexdigest() == key.rsplit("/", 1)[-1]


def manifest_json(manifest: dict[str, dict[str, str]]) -> str:
    """The manifest as stored: deterministic and compact."""
    return json.dumps(manifest, sort_keys=True, separators=(",", ":"))


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
SYSTEMD_DIR = "/etc/systemd/system"
NCCL_CONF_PATH = "/etc/nccl.conf"
FABRIC_PROFILE_PATH = "/etc/profile.d/slurmstack-fabric.sh"
ENROOT_CONF_PATH = "/etc/enroot/enroot.conf"

# systemd units slurmstack installs or starts.
SLURMCTLD_UNIT = "slurmctld.service"
MUNGE_UNIT = "munge.service"
SLURMD_UNIT = "slurmstack-slurmd.service"  # a worker's slurmd (dynamic, configless)
DISTRIBUTION_SLURMD_UNIT = "slurmd.service"  # Debian/Ubuntu's own, unused on workers
REAPER_SERVICE = "slurmstack-reaper.service"
REAPER_TIMER = "slurmstack-reaper.timer"
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


def agent_command(command: Command, *args: str) -> str:
    """The command line that runs ``command`` by the agent's absolute path (systemd units and
    Run Command do not search the login PATH)."""
    return " ".join((AGENT_PATH, command.value, *args))


# The reaper: how long a dead node's record stays DOWN before it is deleted (long enough for
# a reboot, which keeps the address and so the name), and how often it looks.
REAPER_GRACE_SECONDS = 900
REAPER_INTERVAL_MINUTES = 5


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
    """A pool as the head node's reaper knows it."""

    name: str
    node_name_prefix: str
    feature: str


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
    """Devices a node of the pool must have for its boot health check to pass."""

    gpus: int = 0
    neuron_devices: int = 0
    efa_devices: int = 0


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
    pools: tuple[PoolRef, ...] = ()  # whose dead records the reaper may delete
    elastic_pools: tuple[ElasticPool, ...] = ()  # what the power programs launch
    launch_retry: LaunchRetry = field(default_factory=LaunchRetry)
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
    else:
        data["node_name_prefix"] = config.node_name_prefix
        if config.elastic:
            data["elastic"] = True
        data["scratch"] = None if config.scratch is None else {"mount": config.scratch.mount}
        data["health"] = vars(config.health).copy()
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
        health=Health(**(data.get("health") or {})),
        lustre_efa_interfaces=data.get("lustre_efa_interfaces"),
    )


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
IMAGE_MOUNT_ITEMS = {
    MountKind.EFS: _commands(MOUNT_HELPERS[MountKind.EFS]),
    MountKind.LUSTRE: _commands(MOUNT_HELPERS[MountKind.LUSTRE], "lctl"),
}

# The build: bundles in the cluster bucket under IMAGE_PREFIX (read by the image build role
# only, never by nodes), fetched to IMAGE_BUNDLE_DIR on the build and test instances.
IMAGE_PREFIX = "images/"
IMAGE_BUNDLE_DIR = "/var/lib/slurmstack/image/bundle"
