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

import ast
import copy
import hashlib
import inspect
import re
import shlex
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from slurmstack import contract, imds_firewall
from slurmstack.contract import (  # the names users of this module import from it
    AGENT_LIB_DIR as AGENT_LIB_DIR,
)
from slurmstack.contract import (
    AGENT_PACKAGE as AGENT_PACKAGE,
)
from slurmstack.contract import (
    AGENT_PATH as AGENT_PATH,
)
from slurmstack.contract import (
    BOOTSTRAP_DONE as BOOTSTRAP_DONE,
)
from slurmstack.contract import (
    BOOTSTRAP_FAILED as BOOTSTRAP_FAILED,
)
from slurmstack.contract import (
    BOOTSTRAP_PATH as BOOTSTRAP_PATH,
)
from slurmstack.contract import (
    ENROOT_CONF_PATH as ENROOT_CONF_PATH,
)
from slurmstack.contract import (
    FABRIC_PROFILE_PATH as FABRIC_PROFILE_PATH,
)
from slurmstack.contract import (
    HEAD_ROLE as HEAD_ROLE,
)
from slurmstack.contract import (
    LNET_EFA_UNIT as LNET_EFA_UNIT,
)
from slurmstack.contract import (
    NCCL_CONF_PATH as NCCL_CONF_PATH,
)
from slurmstack.contract import (
    NODE_CONFIG_PATH as NODE_CONFIG_PATH,
)
from slurmstack.contract import (
    REAPER_GRACE_SECONDS as REAPER_GRACE_SECONDS,
)
from slurmstack.contract import (
    REAPER_INTERVAL_MINUTES as REAPER_INTERVAL_MINUTES,
)
from slurmstack.contract import (
    REAPER_SERVICE as REAPER_SERVICE,
)
from slurmstack.contract import (
    REAPER_TIMER as REAPER_TIMER,
)
from slurmstack.contract import (
    SLURM_DIR as SLURM_DIR,
)
from slurmstack.contract import (
    SLURMCTLD_DROPIN_PATH as SLURMCTLD_DROPIN_PATH,
)
from slurmstack.contract import (
    SLURMCTLD_PORT as SLURMCTLD_PORT,
)
from slurmstack.contract import (
    SLURMD_PORT as SLURMD_PORT,
)
from slurmstack.contract import (
    SLURMD_UNIT as SLURMD_UNIT,
)
from slurmstack.contract import (
    SRUN_PORT_RANGE as SRUN_PORT_RANGE,
)
from slurmstack.contract import (
    STATE_SAVE_LOCATION as STATE_SAVE_LOCATION,
)
from slurmstack.contract import (
    STATE_VOLUME_DEVICE as STATE_VOLUME_DEVICE,
)
from slurmstack.contract import (
    STATE_VOLUME_MOUNT as STATE_VOLUME_MOUNT,
)
from slurmstack.contract import (
    TASK_PROLOG_PATH as TASK_PROLOG_PATH,
)
from slurmstack.contract import (
    BootstrapEnv as BootstrapEnv,
)
from slurmstack.contract import (
    DeployParameter as DeployParameter,
)
from slurmstack.contract import (
    Health as Health,
)
from slurmstack.contract import (
    Mount as Mount,
)
from slurmstack.contract import (
    MountKind as MountKind,
)
from slurmstack.contract import (
    NodeConfig as NodeConfig,
)
from slurmstack.contract import (
    PoolRef as PoolRef,
)
from slurmstack.contract import (
    Scratch as Scratch,
)
from slurmstack.contract import (
    StateVolume as StateVolume,
)
from slurmstack.contract import (
    bootstrap_env_text as bootstrap_env_text,
)
from slurmstack.contract import (
    node_config_json as node_config_json,
)
from slurmstack.contract import (
    node_name_prefix as node_name_prefix,
)
from slurmstack.contract import (
    unit_path as unit_path,
)
from slurmstack.fabric import EnvTarget, FabricProfile
from slurmstack.plan import ClusterPlan, PoolPlan

CLOUD_INIT = "cloud-init.yaml"
# EC2 refuses user data above 16 KB (before base64).
USER_DATA_LIMIT = 16 * 1024

# The node agent's tree on a node: this package's __init__, the contract and slurmstack/node
# (all but the bootstrap), below AGENT_LIB_DIR as the package has them.
AGENT_DIR = f"{AGENT_LIB_DIR}/{AGENT_PACKAGE}"
# apt after the first boot's packages (the Lustre client) waits for the dpkg lock as well.
APT_LOCK_CONF_PATH = "/etc/apt/apt.conf.d/90slurmstack-dpkg-lock"
APT_LOCK_TIMEOUT_SECONDS = 1200
SLURMD_UNIT_PATH = unit_path(SLURMD_UNIT)
# The head node's dead-node reaper (`slurmstack-node reap`) and the timer that runs it.
REAPER_SERVICE_PATH = unit_path(REAPER_SERVICE)
REAPER_TIMER_PATH = unit_path(REAPER_TIMER)
# Pools that reach an EFA-enabled Lustre file system over EFA: LNet setup before the mount.
LNET_EFA_UNIT_PATH = unit_path(LNET_EFA_UNIT)
# Where `make install` of pyxis puts its SPANK plugin.
PYXIS_PLUGIN = "/usr/local/lib/slurm/spank_pyxis.so"

PACKAGE_DIR = Path(__file__).resolve().parent
NODE_DIR = PACKAGE_DIR / "node"
BOOTSTRAP_SOURCE = NODE_DIR / "bootstrap.py"


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
        return contract.manifest_json(self.manifest)

    @property
    def manifest_key(self) -> str:
        """Store key of the manifest ("config/<sha256>"). Only this key goes into the
        CONFIG_MANIFEST parameter: it stays a few dozen bytes whatever the number of pools,
        while the manifest itself grows with them (an SSM parameter holds at most 8 KB)."""
        return contract.store_key(self.manifest_json().encode())


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
    env.globals["contract"] = contract
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
    return contract.store_key(text.encode())


def agent_modules() -> tuple[Path, ...]:
    """The node agent's modules, as the nodes receive them: the package's __init__, the
    contract, and every module of slurmstack/node and its subpackages but the bootstrap,
    which travels in the cloud-init document and installs them."""
    tree = [PACKAGE_DIR / "__init__.py", PACKAGE_DIR / "contract.py"]
    tree += [p for p in NODE_DIR.rglob("*.py") if p != BOOTSTRAP_SOURCE]
    return tuple(sorted(tree))


def agent_files() -> dict[str, str]:
    """Absolute node path -> text: the agent's launcher and its modules, for every role."""
    launcher = _render(
        "node/slurmstack-node.j2", lib_dir=AGENT_LIB_DIR, module=f"{AGENT_PACKAGE}.node.cli"
    )
    files = {AGENT_PATH: launcher}
    for module in agent_modules():
        files[f"{AGENT_DIR}/{module.relative_to(PACKAGE_DIR).as_posix()}"] = module.read_text()
    return files


def bootstrap_source() -> str:
    """The first-boot script as it goes into the user data: the names it imports from the
    contract are written into it, since nothing of slurmstack is on the node before it runs."""
    return inline_contract(BOOTSTRAP_SOURCE.read_text())


def inline_contract(source: str) -> str:
    """``source`` with its ``from slurmstack.contract import ...`` replaced by the definitions
    it needs: the names it imports and what they use of the contract, in order, a constant as
    an assignment, a function or class as its code without docstrings or comments (to keep the
    user data small), after the standard-library imports they use."""
    tree = ast.parse(source)
    statement = next(
        (s for s in tree.body if isinstance(s, ast.ImportFrom) and s.module == contract.__name__),
        None,
    )
    if statement is None or statement.end_lineno is None:
        raise ValueError(f"the script imports nothing from {contract.__name__}")
    imports: list[str] = []
    definitions: list[str] = []
    seen: set[str] = set()

    def include(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        stdlib, definitions_of = _contract_names()
        if name in stdlib:
            imports.append(stdlib[name])
            return
        node = definitions_of.get(name)
        if node is None:
            value = getattr(contract, name)
            if not isinstance(value, str | int | tuple):
                raise TypeError(f"contract.{name} is neither a definition nor a literal")
            definitions.append(f"{name} = {value!r}")
            return
        loads = {
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        for used in sorted(loads):
            if used in stdlib or used in definitions_of or used in vars(contract):
                include(used)
        definitions.append(_without_docstrings(node))

    for alias in statement.names:
        include(alias.name)
    lines = source.splitlines(keepends=True)
    inlined = "".join(f"{line}\n" for line in [*sorted(imports), *definitions])
    return "".join(lines[: statement.lineno - 1]) + inlined + "".join(lines[statement.end_lineno :])


@cache
def _contract_names() -> tuple[dict[str, str], dict[str, ast.stmt]]:
    """(name -> the import statement that binds it, name -> definition) of the contract."""
    tree = ast.parse(inspect.getsource(contract))
    stdlib: dict[str, str] = {}
    definitions: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            stdlib.update({a.asname or a.name: f"import {a.name}" for a in node.names})
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            stdlib.update({a.name: f"from {node.module} import {a.name}" for a in node.names})
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            definitions[node.name] = node
    return stdlib, definitions


def _without_docstrings(definition: ast.stmt) -> str:
    """The code of a definition without docstrings, and without the annotations of functions
    (a dataclass's fields keep theirs: they are its fields)."""
    definition = copy.deepcopy(definition)
    for node in ast.walk(definition):
        if isinstance(node, ast.FunctionDef):
            node.returns = None
            for arg in [*node.args.args, *node.args.kwonlyargs]:
                arg.annotation = None
        if not isinstance(node, ast.FunctionDef | ast.ClassDef):
            continue
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            node.body = node.body[1:] or [ast.Pass()]
    return ast.unparse(definition)


def roles(plan: ClusterPlan) -> tuple[str, ...]:
    return (HEAD_ROLE, *(p.name for p in plan.pools))


# --- files per role -------------------------------------------------------------------


def slurm_conf(plan: ClusterPlan) -> str:
    return _render(
        "slurm/slurm.conf.j2",
        plan=plan,
        head_host=contract.head_host(plan.name),
        ports=Ports(),
        state_save_location=STATE_SAVE_LOCATION,
    )


def gres_conf(plan: ClusterPlan) -> str:
    return _render("slurm/gres.conf.j2", plan=plan)


def cgroup_conf(plan: ClusterPlan) -> str:
    return _render("slurm/cgroup.conf.j2", plan=plan)


def plugstack_conf(plan: ClusterPlan) -> str:
    return _render("slurm/plugstack.conf.j2", plan=plan, pyxis_plugin=PYXIS_PLUGIN)


def node_config(plan: ClusterPlan, pool: PoolPlan | None) -> NodeConfig:
    """What the node agent needs to know about its role (node.json): the head node's
    (``pool`` None) or a node's of ``pool``."""
    mounts = tuple(
        Mount(m.kind, m.path)
        for m in (pool.mounts if pool is not None else plan.mounts)
        if m.kind is not MountKind.NVME_RAID0
    )
    common = NodeConfig(
        cluster=plan.name,
        region=plan.region,
        role=HEAD_ROLE if pool is None else pool.name,
        parameter_prefix=plan.parameter_prefix,
        munge_secret=plan.munge_secret_name,
        mounts=mounts,
    )
    if pool is None:
        return replace(
            common,
            state_volume=StateVolume(STATE_VOLUME_DEVICE, STATE_VOLUME_MOUNT, STATE_SAVE_LOCATION),
            # The reaper deletes dead records of these pools' nodes only.
            pools=tuple(PoolRef(p.name, node_name_prefix(p.name), p.feature) for p in plan.pools),
        )
    scratch = pool.local_scratch_mount
    return replace(
        common,
        node_name_prefix=node_name_prefix(pool.name),
        scratch=Scratch(scratch.path) if scratch is not None else None,
        health=Health(pool.expected_gpus, pool.expected_neuron_devices, pool.expected_efa_devices),
        # EFA interfaces LNet uses for Lustre; 0: the pool mounts Lustre over TCP.
        lustre_efa_interfaces=pool.lustre_efa_interfaces if plan.lustre is not None else None,
    )


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
        NODE_CONFIG_PATH: node_config_json(node_config(plan, None)),
        **agent_files(),
    }


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
        NODE_CONFIG_PATH: node_config_json(node_config(plan, pool)),
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


def bootstrap_env(plan: ClusterPlan, role: str) -> BootstrapEnv:
    return BootstrapEnv(
        cluster=plan.name,
        region=plan.region,
        role=role,
        parameter_prefix=plan.parameter_prefix,
        munge_secret=plan.munge_secret_name,
        manifest_parameter=plan.parameter(DeployParameter.CONFIG_MANIFEST),
        bucket_parameter=plan.parameter(DeployParameter.BUCKET),
    )


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
        "agent_command": AGENT_PATH.rsplit("/", 1)[-1],
        "bootstrap_env": bootstrap_env_text(bootstrap_env(plan, role)),
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
