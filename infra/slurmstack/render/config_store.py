"""The config store: every file of every role (but the cloud-init documents), packed in
bundles keyed by their content's hash, and the manifest that names them (contract.Manifest).

The agent's files are the same for every role and travel in one shared bundle; each role's
other files travel in a bundle of its own. So the stack uploads one object per role (plus the
agent's and the manifest), not one per file: 64 pools are 67 objects, not some 400.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from slurmstack import contract
from slurmstack.plan import ClusterPlan
from slurmstack.render.files import role_files
from slurmstack.render.roles import roles


@dataclass(frozen=True)
class ConfigStore:
    objects: dict[str, str]  # store key ("config/<sha256>") -> bundle text
    manifest: dict[str, dict[str, str]]  # role -> absolute node path -> key of its content
    bundles: dict[str, tuple[str, ...]]  # role -> keys of the bundles carrying its files

    def manifest_json(self) -> str:
        """Deterministic and compact; stored in the config store like the bundles."""
        return contract.manifest_json(contract.Manifest(files=self.manifest, bundles=self.bundles))

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
    bundles: dict[str, tuple[str, ...]] = {}
    for role in roles(plan):
        files = role_files(plan, role)
        manifest[role] = {path: store_key(text) for path, text in sorted(files.items())}
        keys = []
        for agent in (True, False):
            part = {p: text for p, text in files.items() if contract.is_agent_file(p) is agent}
            if part:
                text = contract.bundle_text(part)
                objects[store_key(text)] = text
                keys.append(store_key(text))
        bundles[role] = tuple(keys)
    return ConfigStore(objects=dict(sorted(objects.items())), manifest=manifest, bundles=bundles)
