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


# --- tags ------------------------------------------------------------------------------

# On every resource of the cluster (the stack); the reaper finds the cluster's instances by
# CLUSTER_TAG and their pool by POOL_TAG. The prefix is slurmstack's own: definitions may not
# use it for their tags.
TAG_PREFIX = "slurmstack:"
CLUSTER_TAG = f"{TAG_PREFIX}cluster"
ROLE_TAG = f"{TAG_PREFIX}role"
POOL_TAG = f"{TAG_PREFIX}pool"
IMAGE_TAG = f"{TAG_PREFIX}image"  # on an Image Builder image: the key of the image it is

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


def unit_path(unit: str) -> str:
    return f"{SYSTEMD_DIR}/{unit}"


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
    HEALTH_CHECK = "health-check"
    SHIP_LOGS = "ship-logs"
    CONTROL = "control"
    BREAKER = "breaker"


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
    pools: tuple[PoolRef, ...] = ()  # the pools whose nodes the controller looks after
    repair: RepairPolicy | None = None  # the controller's policy
    # A pool's node.
    node_name_prefix: str = ""
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
        data["repair"] = None if config.repair is None else repair_policy_data(config.repair)
    else:
        data["node_name_prefix"] = config.node_name_prefix
        data["scratch"] = None if config.scratch is None else {"mount": config.scratch.mount}
        health = vars(config.health).copy()
        health["critical_xids"] = list(config.health.critical_xids)
        data["health"] = health
        if config.lustre_efa_interfaces is not None:
            data["lustre_efa_interfaces"] = config.lustre_efa_interfaces
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


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
        node_name_prefix=str(data.get("node_name_prefix") or ""),
        scratch=Scratch(str(scratch["mount"])) if scratch else None,
        health=Health(**health),
        repair=read_repair_policy(repair) if repair else None,
        lustre_efa_interfaces=data.get("lustre_efa_interfaces"),
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
IMAGE_MOUNT_ITEMS = {
    MountKind.EFS: _commands(MOUNT_HELPERS[MountKind.EFS]),
    MountKind.LUSTRE: _commands(MOUNT_HELPERS[MountKind.LUSTRE], "lctl"),
}

# The build: bundles in the cluster bucket under IMAGE_PREFIX (read by the image build role
# only, never by nodes), fetched to IMAGE_BUNDLE_DIR on the build and test instances.
IMAGE_PREFIX = "images/"
IMAGE_BUNDLE_DIR = "/var/lib/slurmstack/image/bundle"
