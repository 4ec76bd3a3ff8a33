"""Render the plan into the files nodes receive, with Jinja2 (StrictUndefined).

Public API (kept stable for the stack):
- render_cluster(plan) -> dict[str, str]: every file a node receives, keyed by a relative path
  mirroring where it lands: "head/..." for the head node, "pools/<pool>/..." per pool;
  the cloud-init documents are "head/cloud-init.yaml" and "pools/<pool>/cloud-init.yaml".
- user_data(plan, role) -> str: the cloud-init document for role "head" or a pool name
  (identical to the corresponding render_cluster entry). Carries only stable identifiers.
- config_store(plan) -> ConfigStore: the files nodes pull at boot from the cluster's config
  store, keyed by content hash, and the manifest (role -> node path -> store key).

Every file except the cloud-init documents travels through the config store; the cloud-init
document only installs the node agent (the modules of ``slurmstack/node`` and their launcher),
which pulls the rest.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from slurmstack import accounting as acct
from slurmstack import imds_firewall
from slurmstack.fabric import EnvTarget, FabricProfile
from slurmstack.plan import (
    REAPER_GRACE_SECONDS,
    REAPER_INTERVAL_MINUTES,
    SLURMCTLD_PORT,
    SLURMD_PORT,
    SRUN_PORT_RANGE,
    STATE_SAVE_LOCATION,
    STATE_VOLUME_MOUNT,
    ClusterPlan,
    DeployParameter,
    MountKind,
    PoolPlan,
)

HEAD_ROLE = "head"
CLOUD_INIT = "cloud-init.yaml"
# EC2 refuses user data above 16 KB (before base64).
USER_DATA_LIMIT = 16 * 1024

# Where files land on the nodes.
# The node agent: its launcher, and the package (slurmstack/node but bootstrap.py) it runs,
# installed as AGENT_PACKAGE in AGENT_LIB_DIR (slurmstack.node.bootstrap.AGENT_DIR).
AGENT_PATH = "/usr/local/bin/slurmstack-node"
AGENT_LIB_DIR = "/usr/local/lib/slurmstack"
AGENT_PACKAGE = "node_agent"
AGENT_DIR = f"{AGENT_LIB_DIR}/{AGENT_PACKAGE}"
NODE_CONFIG_PATH = "/etc/slurmstack/node.json"
# The first-boot runner (slurmstack/node/bootstrap.py) and the markers it leaves: the head's
# apply-config document reads them (slurmstack.stack.config_store).
BOOTSTRAP_PATH = "/usr/local/sbin/slurmstack-bootstrap"
BOOTSTRAP_DONE = "/var/lib/slurmstack/bootstrap.done"
BOOTSTRAP_FAILED = "/var/lib/slurmstack/bootstrap.failed"
# apt after the first boot's packages (the Lustre client) waits for the dpkg lock as well.
APT_LOCK_CONF_PATH = "/etc/apt/apt.conf.d/90slurmstack-dpkg-lock"
APT_LOCK_TIMEOUT_SECONDS = 1200
TASK_PROLOG_PATH = "/etc/slurmstack/task-prolog.sh"
SLURM_DIR = "/etc/slurm"
SLURMD_UNIT_PATH = "/etc/systemd/system/slurmstack-slurmd.service"
SLURMCTLD_DROPIN_PATH = "/etc/systemd/system/slurmctld.service.d/slurmstack.conf"
# The head node's dead-node reaper (`slurmstack-node reap`) and the timer that runs it.
REAPER_SERVICE_PATH = "/etc/systemd/system/slurmstack-reaper.service"
REAPER_TIMER_PATH = "/etc/systemd/system/slurmstack-reaper.timer"
# Pools that reach an EFA-enabled Lustre file system over EFA: LNet setup before the mount.
LNET_EFA_UNIT_PATH = "/etc/systemd/system/slurmstack-lustre-efa.service"
NCCL_CONF_PATH = "/etc/nccl.conf"
FABRIC_PROFILE_PATH = "/etc/profile.d/slurmstack-fabric.sh"
ENROOT_CONF_PATH = "/etc/enroot/enroot.conf"

# The head node's Slurm state volume: the stack attaches it under this device name (on
# Nitro it appears as an NVMe disk whose controller reports that name).
STATE_VOLUME_DEVICE = "/dev/sdf"
# Where `make install` of pyxis puts its SPANK plugin.
PYXIS_PLUGIN = "/usr/local/lib/slurm/spank_pyxis.so"

NODE_DIR = Path(__file__).resolve().parent / "node"


@dataclass(frozen=True)
class Ports:
    slurmctld: int = SLURMCTLD_PORT
    slurmd: int = SLURMD_PORT
    srun: tuple[int, int] = SRUN_PORT_RANGE


@dataclass(frozen=True)
class ConfigStore:
    objects: dict[str, str]  # store key ("config/<sha256>") -> file text
    manifest: dict[str, dict[str, str]]  # role -> absolute node path -> store key

    def manifest_json(self) -> str:
        """Deterministic and compact; stored in the config store like every other file."""
        return json.dumps(self.manifest, sort_keys=True, separators=(",", ":"))

    @property
    def manifest_key(self) -> str:
        """Store key of the manifest ("config/<sha256>"). Only this key goes into the
        CONFIG_MANIFEST parameter: it stays a few dozen bytes whatever the number of pools,
        while the manifest itself grows with them (an SSM parameter holds at most 8 KB)."""
        return "config/" + hashlib.sha256(self.manifest_json().encode()).hexdigest()


def templates_dir() -> Path:
    """The repository's templates/, else the copy installed inside the package."""
    repo = Path(__file__).resolve().parents[2] / "templates"
    if repo.is_dir():
        return repo
    return Path(__file__).resolve().parent / "templates"


def _nccl_comment(text: str) -> str:
    # NCCL's nccl.conf reader sets an environment variable for every line that holds an
    # equals sign, comments included, so comments are written without one.
    return text.replace(">=", "at least ").replace("<=", "at most ").replace("=", " is ")


def _dq_escape(text: str) -> str:
    """Safe inside a double-quoted shell string."""
    return re.sub(r'([\\"$`])', r"\\\1", text)


@cache
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["shell_quote"] = shlex.quote
    env.filters["nccl_comment"] = _nccl_comment
    env.filters["dq_escape"] = _dq_escape
    return env


def _render(template: str, **context: object) -> str:
    return _environment().get_template(template).render(**context)


def mount_unit_name(path: str) -> str:
    """systemd's mount unit for ``path`` (as `systemd-escape --path --suffix=mount` names it):
    slashes become dashes, and anything but ASCII letters, digits, ':', '_' and a '.' that does
    not lead is written \\xNN."""
    parts = path.strip("/")
    if not parts:
        return "-.mount"
    out = []
    for index, char in enumerate(parts):
        if char == "/":
            out.append("-")
        elif char.isascii() and (char.isalnum() or char in ":_" or (char == "." and index)):
            out.append(char)
        else:
            out.append(f"\\x{ord(char):02x}")
    return "".join(out) + ".mount"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def store_key(text: str) -> str:
    return f"config/{sha256(text)}"


def agent_modules() -> tuple[Path, ...]:
    """The node agent's modules: every module of slurmstack/node but the bootstrap, which
    travels in the cloud-init document and installs them."""
    return tuple(sorted(p for p in NODE_DIR.glob("*.py") if p.name != "bootstrap.py"))


def agent_files() -> dict[str, str]:
    """Absolute node path -> text: the agent's launcher and its modules, for every role."""
    files = {
        AGENT_PATH: _render("node/slurmstack-node.j2", lib_dir=AGENT_LIB_DIR, package=AGENT_PACKAGE)
    }
    for module in agent_modules():
        files[f"{AGENT_DIR}/{module.name}"] = module.read_text()
    return files


def bootstrap_source() -> str:
    return (NODE_DIR / "bootstrap.py").read_text()


def roles(plan: ClusterPlan) -> tuple[str, ...]:
    return (HEAD_ROLE, *(p.name for p in plan.pools))


# --- files per role -------------------------------------------------------------------


def slurm_conf(plan: ClusterPlan) -> str:
    return _render(
        "slurm/slurm.conf.j2",
        plan=plan,
        head_host=f"{plan.name}-head",
        ports=Ports(),
        state_save_location=STATE_SAVE_LOCATION,
        accounting=acct.accounting_plan(plan),
    )


def gres_conf(plan: ClusterPlan) -> str:
    return _render("slurm/gres.conf.j2", plan=plan)


def cgroup_conf(plan: ClusterPlan) -> str:
    return _render("slurm/cgroup.conf.j2", plan=plan)


def plugstack_conf(plan: ClusterPlan) -> str:
    return _render("slurm/plugstack.conf.j2", plan=plan, pyxis_plugin=PYXIS_PLUGIN)


def _node_config(plan: ClusterPlan, pool: PoolPlan | None) -> str:
    """What the node agent needs to know about its role (node.json)."""
    mounts = pool.mounts if pool is not None else plan.mounts
    data: dict[str, object] = {
        "generated_by": "slurmstack",
        "cluster": plan.name,
        "region": plan.region,
        "role": HEAD_ROLE if pool is None else pool.name,
        "parameter_prefix": plan.parameter_prefix,
        "munge_secret": plan.munge_secret_name,
        "mounts": [
            {"kind": m.kind.value, "path": m.path}
            for m in mounts
            if m.kind is not MountKind.NVME_RAID0
        ],
    }
    if pool is None:
        data["state_volume"] = {
            "device_name": STATE_VOLUME_DEVICE,
            "mount": STATE_VOLUME_MOUNT,
            "state_dir": STATE_SAVE_LOCATION,
        }
        # The reaper deletes dead records of these pools' nodes only.
        data["pools"] = [
            {"name": p.name, "node_name_prefix": f"{p.name}-", "feature": p.feature}
            for p in plan.pools
        ]
    else:
        scratch = pool.local_scratch_mount
        data["node_name_prefix"] = f"{pool.name}-"
        data["scratch"] = {"mount": scratch.path} if scratch is not None else None
        data["health"] = {
            "gpus": pool.expected_gpus,
            "neuron_devices": pool.expected_neuron_devices,
            "efa_devices": pool.expected_efa_devices,
        }
        if plan.lustre is not None:
            # EFA interfaces LNet uses for Lustre; 0: the pool mounts Lustre over TCP.
            data["lustre_efa_interfaces"] = pool.lustre_efa_interfaces
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def head_files(plan: ClusterPlan) -> dict[str, str]:
    """Absolute node path -> text, for the head node (cloud-init document excluded)."""
    return {
        f"{SLURM_DIR}/slurm.conf": slurm_conf(plan),
        f"{SLURM_DIR}/gres.conf": gres_conf(plan),
        f"{SLURM_DIR}/cgroup.conf": cgroup_conf(plan),
        f"{SLURM_DIR}/plugstack.conf": plugstack_conf(plan),
        SLURMCTLD_DROPIN_PATH: _render(
            "systemd/slurmctld-dropin.conf.j2", plan=plan, state_volume_mount=STATE_VOLUME_MOUNT
        ),
        REAPER_SERVICE_PATH: _render(
            "systemd/slurmstack-reaper.service.j2", plan=plan, grace_seconds=REAPER_GRACE_SECONDS
        ),
        REAPER_TIMER_PATH: _render(
            "systemd/slurmstack-reaper.timer.j2",
            plan=plan,
            interval_minutes=REAPER_INTERVAL_MINUTES,
        ),
        NODE_CONFIG_PATH: _node_config(plan, None),
        **accounting_files(plan),
        **agent_files(),
    }


# --- accounting (slurm.accounting; slurmstack.accounting decides, these files carry it) ---


def accounting_files(plan: ClusterPlan) -> dict[str, str]:
    """Absolute node path -> text: the head node's accounting files. accounting.json always
    (the agent learns from it that accounting is off); slurmdbd's configuration (without its
    password) and unit drop-in when it is on; MariaDB's when the database is the local one."""
    files = {acct.ACCOUNTING_CONFIG_PATH: acct.node_config(plan)}
    accounting = acct.accounting_plan(plan)
    if accounting is None:
        return files
    files[acct.SLURMDBD_CONF_RENDERED_PATH] = _render(
        "slurm/slurmdbd.conf.j2",
        plan=plan,
        accounting=accounting,
        live_path=acct.SLURMDBD_CONF_PATH,
        host_parameter=plan.parameter_prefix + "/" + acct.DB_HOST_PARAMETER,
        pid_file=acct.SLURMDBD_PID_FILE,
        log_file=acct.SLURMDBD_LOG_FILE,
    )
    files[acct.SLURMDBD_DROPIN_PATH] = _render(
        "systemd/slurmdbd-dropin.conf.j2", plan=plan, accounting=accounting
    )
    if accounting.database.local:
        files[acct.MARIADB_CONF_PATH] = _render(
            "mariadb/slurmstack.cnf.j2",
            plan=plan,
            accounting=accounting,
            data_dir=acct.MARIADB_DATA_DIR,
            log_file_mib=acct.INNODB_LOG_FILE_MIB,
            lock_wait_timeout=acct.INNODB_LOCK_WAIT_TIMEOUT,
            max_allowed_packet_mib=acct.MAX_ALLOWED_PACKET_MIB,
        )
        files[acct.MARIADB_DROPIN_PATH] = _render(
            "systemd/mariadb-dropin.conf.j2", plan=plan, state_volume_mount=STATE_VOLUME_MOUNT
        )
    return files


def pool_files(plan: ClusterPlan, pool: PoolPlan) -> dict[str, str]:
    """Absolute node path -> text, for a node of ``pool`` (cloud-init document excluded)."""
    files = {
        SLURMD_UNIT_PATH: _render(
            "systemd/slurmstack-slurmd.service.j2",
            plan=plan,
            pool=pool,
            ports=Ports(),
            scratch_mount_unit=(
                mount_unit_name(pool.local_scratch_mount.path)
                if pool.local_scratch_mount is not None
                else None
            ),
        ),
        TASK_PROLOG_PATH: _render(
            "slurm/task-prolog.sh.j2", pool=pool, env=pool.env_for(EnvTarget.PROCESS)
        ),
        ENROOT_CONF_PATH: _render("enroot/enroot.conf.j2", pool=pool),
        NODE_CONFIG_PATH: _node_config(plan, pool),
        **agent_files(),
    }
    if pool.gpu is not None or pool.env_for(EnvTarget.NCCL_CONF):
        files[NCCL_CONF_PATH] = _render(
            "nccl/nccl.conf.j2", pool=pool, env=pool.env_for(EnvTarget.NCCL_CONF)
        )
    if pool.lustre_over_efa and plan.lustre is not None:
        files[LNET_EFA_UNIT_PATH] = _render(
            "systemd/slurmstack-lustre-efa.service.j2",
            plan=plan,
            pool=pool,
            lustre_mount=plan.lustre.spec.mount,
        )
    if pool.env_for(EnvTarget.PROCESS):
        files[FABRIC_PROFILE_PATH] = _render(
            "nccl/fabric.sh.j2", pool=pool, env=pool.env_for(EnvTarget.PROCESS)
        )
    return dict(sorted(files.items()))


def role_files(plan: ClusterPlan, role: str) -> dict[str, str]:
    if role == HEAD_ROLE:
        return head_files(plan)
    return pool_files(plan, _pool(plan, role))


# --- cloud-init -----------------------------------------------------------------------


def _bootstrap_env(plan: ClusterPlan, role: str) -> str:
    lines = [
        f"SLURMSTACK_CLUSTER={plan.name}",
        f"SLURMSTACK_REGION={plan.region}",
        f"SLURMSTACK_ROLE={role}",
        f"SLURMSTACK_PARAMETER_PREFIX={plan.parameter_prefix}",
        f"SLURMSTACK_MUNGE_SECRET={plan.munge_secret_name}",
        f"SLURMSTACK_MANIFEST_PARAMETER={plan.parameter(DeployParameter.CONFIG_MANIFEST)}",
        f"SLURMSTACK_BUCKET_PARAMETER={plan.parameter(DeployParameter.BUCKET)}",
    ]
    return "\n".join(lines) + "\n"


# nftables: the metadata-service firewall (imds_firewall) is loaded with its `nft`.
COMMON_PACKAGES = (
    "munge",
    "slurm-client",
    "python3-boto3",
    "nvme-cli",
    "nfs-common",
    "nftables",
)
# Debian/Ubuntu's mpi/pmix plugin dlopen()s the unversioned libpmix.so, which only the
# -dev package installs; without it MpiDefault=pmix fails to load.
PMIX_PACKAGES = ("libpmix-dev",)
# EFA userspace for pools on the plain Ubuntu image (the Deep Learning AMIs bring the EFA
# installer's own): verbs provider and libfabric with its EFA provider.
EFA_CPU_PACKAGES = ("rdma-core", "ibverbs-providers", "libfabric1")


def head_packages(plan: ClusterPlan) -> tuple[str, ...]:
    return ("slurmctld", *COMMON_PACKAGES, *PMIX_PACKAGES)


def pool_packages(pool: PoolPlan) -> tuple[str, ...]:
    packages = ["slurmd", *COMMON_PACKAGES, *PMIX_PACKAGES]
    if pool.local_scratch_mount is not None:
        packages.append("mdadm")
    if pool.fabric is FabricProfile.EFA_CPU:
        packages += EFA_CPU_PACKAGES
    return tuple(packages)


def imds_firewall_files(plan: ClusterPlan, role: str) -> dict[str, str]:
    """Absolute node path -> text: the metadata-service firewall of ``role`` and the unit that
    loads it. They travel in the cloud-init document itself, not the config store, so they are
    on disk before anything on the node fetches a credential."""
    fw = imds_firewall.firewall(role, head=role == HEAD_ROLE)
    return {
        fw.rules_path: _render("nftables/imds-firewall.nft.j2", plan=plan, fw=fw),
        imds_firewall.UNIT_PATH: _render(
            "systemd/slurmstack-imds-firewall.service.j2", plan=plan, fw=fw
        ),
    }


def user_data(plan: ClusterPlan, role: str) -> str:
    """The cloud-init document of ``role`` ("head" or a pool name)."""
    firewall_files = imds_firewall_files(plan, role)
    common = {
        "plan": plan,
        "bootstrap": BOOTSTRAP_PATH,
        # runcmd's PATH (systemd's default) holds /usr/local/sbin and /usr/local/bin.
        "bootstrap_command": BOOTSTRAP_PATH.rsplit("/", 1)[-1],
        "bootstrap_env": _bootstrap_env(plan, role),
        "bootstrap_script": bootstrap_source(),
        "imds_firewall_rules_path": imds_firewall.RULES_PATH,
        "imds_firewall_rules": firewall_files[imds_firewall.RULES_PATH],
        "imds_firewall_unit_path": imds_firewall.UNIT_PATH,
        "imds_firewall_unit": firewall_files[imds_firewall.UNIT_PATH],
        "imds_firewall_unit_name": imds_firewall.UNIT_NAME,
        "failed_marker": BOOTSTRAP_FAILED,
        "apt_lock_conf_path": APT_LOCK_CONF_PATH,
        "apt_lock_conf": f'DPkg::Lock::Timeout "{APT_LOCK_TIMEOUT_SECONDS}";',
    }
    if role == HEAD_ROLE:
        text = _render(
            "cloud-init/head.yaml.j2",
            packages=head_packages(plan),
            state_volume_device=STATE_VOLUME_DEVICE,
            state_volume_mount=STATE_VOLUME_MOUNT,
            accounting=acct.accounting_plan(plan),
            **common,
        )
    else:
        pool = _pool(plan, role)
        text = _render("cloud-init/pool.yaml.j2", pool=pool, packages=pool_packages(pool), **common)
    if len(text.encode()) > USER_DATA_LIMIT:
        raise ValueError(f"user data of {role} is {len(text.encode())} bytes, over EC2's 16 KB")
    return text


# --- the whole cluster ----------------------------------------------------------------


def _pool(plan: ClusterPlan, name: str) -> PoolPlan:
    try:
        return plan.pool(name)
    except KeyError:
        expected = list(roles(plan)[1:])
        raise KeyError(f"no role {name!r}: expected 'head' or one of {expected}") from None


def _prefix(role: str) -> str:
    return HEAD_ROLE if role == HEAD_ROLE else f"pools/{role}"


def render_cluster(plan: ClusterPlan) -> dict[str, str]:
    out: dict[str, str] = {}
    for role in roles(plan):
        prefix = _prefix(role)
        out[f"{prefix}/{CLOUD_INIT}"] = user_data(plan, role)
        for path, text in role_files(plan, role).items():
            out[prefix + path] = text
    return dict(sorted(out.items()))


def config_store(plan: ClusterPlan) -> ConfigStore:
    objects: dict[str, str] = {}
    manifest: dict[str, dict[str, str]] = {}
    for role in roles(plan):
        entries: dict[str, str] = {}
        for path, text in role_files(plan, role).items():
            key = store_key(text)
            objects[key] = text
            entries[path] = key
        manifest[role] = dict(sorted(entries.items()))
    return ConfigStore(objects=dict(sorted(objects.items())), manifest=manifest)


_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)\s*=")


def slurm_conf_keys(text: str) -> list[str]:
    """The keys a slurm.conf text sets, in order (NodeSet and PartitionName lines count
    once per line, by their first key)."""
    keys: list[str] = []
    for line in text.splitlines():
        match = _KEY.match(line.split("#", 1)[0])
        if match:
            keys.append(match.group(1))
    return keys
