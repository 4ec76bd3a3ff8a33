"""The cluster bucket's layout: the config store (content-keyed objects, bundles, the
manifest), the elastic launches' node names, and where nodes copy their logs."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from .paths import (
    AGENT_LIB_DIR,
    AGENT_PATH,
    BOOTSTRAP_FAILED,
    CLOUD_INIT_OUTPUT_PATH,
    EVENTS_LOG_PATH,
    HEALTH_LOG_PATH,
    SLURMD_LOG_PATH,
)

__all__ = [
    "CONFIG_PREFIX",
    "LAUNCHES_PREFIX",
    "LOGS_PREFIX",
    "LOGS_SHIPPED_MARKER",
    "SHIPPED_LOGS",
    "Manifest",
    "bundle_text",
    "is_agent_file",
    "launch_key",
    "launch_names_text",
    "log_prefix",
    "manifest_json",
    "matches_key",
    "read_bundle",
    "read_launch_names",
    "read_manifest",
    "store_key",
]

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


def log_prefix(pool: str, arn: str) -> str:
    """The bucket prefix of one instance's logs (see LOGS_PREFIX)."""
    return f"{LOGS_PREFIX}{pool}/{arn}/"


# The elastic nodes' names, one object per launch (LAUNCH_TAG): the head's power programs write
# it (their role may write below this prefix only), an elastic instance reads its name in it at
# boot. The bucket expires them after a while (the stack's lifecycle rule).
LAUNCHES_PREFIX = "launches/"


def launch_key(launch_id: str) -> str:
    return f"{LAUNCHES_PREFIX}{launch_id}.json"


def launch_names_text(names: dict[str, str]) -> str:
    """One launch's object: instance id -> Slurm node name."""
    return _compact_json({"nodes": names})


def read_launch_names(body: bytes) -> dict[str, str]:
    return {str(k): str(v) for k, v in json.loads(body)["nodes"].items()}
