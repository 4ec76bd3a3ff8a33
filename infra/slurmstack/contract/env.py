"""The node's KEY=value files: bootstrap.env (who the node is) and node.env (what it learned at
boot); and the deploy-time parameters as the node read them at boot."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields

__all__ = [
    "ENV_PREFIX",
    "PARAMETERS_FRESH_SECONDS",
    "BootstrapEnv",
    "DeployValues",
    "NodeEnv",
    "bootstrap_env_text",
    "conf_servers",
    "deploy_values_of",
    "env_key",
    "env_ref",
    "parse_env",
    "read_bootstrap_env",
    "read_deploy_values",
    "read_node_env",
]

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
    backup_address: str = ""  # head_node.backup: the second controller's
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


def conf_servers(backup: bool, port: int) -> str:
    """slurmd's and sackd's --conf-server list as a unit expands it: the head, then with a
    backup controller (head_node.backup) the backup, so a node boots while either serves."""
    servers = [f"{env_ref('head_address')}:{port}"]
    if backup:
        servers.append(f"{env_ref('backup_address')}:{port}")
    return ",".join(servers)


# --- the deploy-time parameters, as read at boot -------------------------------------------

# A node reads the deploy-time parameters of its role (names.parameter_calls) in one
# GetParameters call (the head in two) when it first needs one, and keeps the answer in
# PARAMETERS_CACHE_PATH, on /run: gone at the next boot. Parameter Store allows an account 40
# reads a second by default, which a thousand nodes booting at once would exceed ninefold at
# nine reads each. An answer older than this is read again when a value is asked for.
PARAMETERS_FRESH_SECONDS = 1800


@dataclass(frozen=True)
class DeployValues:
    """Deploy-time values by parameter key (e.g. ``head/address``), and when they were read."""

    read_at: float
    values: dict[str, str]

    def text(self) -> str:
        return json.dumps({"read_at": self.read_at, "values": self.values}, sort_keys=True)


def read_deploy_values(text: str) -> DeployValues:
    data = json.loads(text)
    values = {str(k): str(v) for k, v in data["values"].items()}
    return DeployValues(float(data["read_at"]), values)


def deploy_values_of(answer: dict[str, object], prefix: str) -> dict[str, str]:
    """Parameter key -> value of a GetParameters answer for names under ``prefix``."""
    found = {}
    for item in answer.get("Parameters") or ():  # type: ignore[attr-defined]
        name, value = str(item["Name"]), str(item["Value"])
        if name.startswith(prefix + "/"):
            found[name[len(prefix) + 1 :]] = value
    return found
