"""Render the plan into files with Jinja2 (StrictUndefined). INTERFACE STUB: being implemented.

Public API (kept stable for the stack):
- render_cluster(plan) -> dict[str, str]: every file a node receives, keyed by a relative path
  mirroring where it lands: "head/..." for the head node, "pools/<pool>/..." per pool;
  the cloud-init documents are "head/cloud-init.yaml" and "pools/<pool>/cloud-init.yaml".
- user_data(plan, role) -> str: the cloud-init document for role "head" or a pool name
  (identical to the corresponding render_cluster entry). Carries only stable identifiers.
- config_store(plan) -> ConfigStore: the files nodes pull at boot from the cluster's config
  store, keyed by content hash, and the manifest (role -> node path -> store key).
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.plan import ClusterPlan


@dataclass(frozen=True)
class ConfigStore:
    objects: dict[str, str]  # store key ("config/<sha256>") -> file text
    manifest: dict[str, dict[str, str]]  # role -> absolute node path -> store key

    def manifest_json(self) -> str:
        raise NotImplementedError


def render_cluster(plan: ClusterPlan) -> dict[str, str]:
    raise NotImplementedError


def user_data(plan: ClusterPlan, role: str) -> str:
    raise NotImplementedError


def config_store(plan: ClusterPlan) -> ConfigStore:
    raise NotImplementedError
