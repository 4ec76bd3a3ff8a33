"""The config store: every file of every role (but the cloud-init documents) as an object
keyed by its content's hash, and the manifest (role -> node path -> key) that names them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from slurmstack import contract
from slurmstack.plan import ClusterPlan
from slurmstack.render.files import role_files
from slurmstack.render.roles import roles


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


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def store_key(text: str) -> str:
    return contract.store_key(text.encode())


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
