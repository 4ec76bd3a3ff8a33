"""Render the plan into the files nodes receive, with Jinja2 (StrictUndefined).

One module per file family: ``slurm`` (Slurm's files and daemons' units), ``accounting``
(slurmdbd's and MariaDB's files, accounting.json), ``nccl`` (the fabric's environment,
enroot), ``node`` (node.json and the agent), ``cloud_init`` (the user data and the first-boot
script), ``config_store`` (objects and manifest), ``image`` (the node images' build inputs:
settings, bundle, component document); ``files`` assembles each role's files, ``templates``
is the Jinja2 environment.

Public API (kept stable for the stack and the tests, re-exported here):
- render_cluster(plan) -> dict[str, str]: every file a node receives, keyed by a relative path
  mirroring where it lands: "head/..." for the head node, "pools/<pool>/..." per pool;
  the cloud-init documents are "head/cloud-init.yaml" and "pools/<pool>/cloud-init.yaml".
- user_data(plan, role) -> str: the cloud-init document for role "head" or a pool name
  (identical to the corresponding render_cluster entry). Carries only stable identifiers.
- config_store(plan) -> ConfigStore: the files nodes pull at boot from the cluster's config
  store, keyed by content hash, and the manifest (role -> node path -> store key).

Every file except the cloud-init documents travels through the config store; the cloud-init
document only installs the node agent (the contract and ``slurmstack/node`` with their
launcher), which pulls the rest.
"""

from slurmstack.render.accounting import accounting_config, accounting_files
from slurmstack.render.cloud_init import (
    CLOUD_INIT,
    USER_DATA_LIMIT,
    bootstrap_env,
    bootstrap_source,
    imds_firewall_files,
    inline_contract,
    user_data,
)
from slurmstack.render.config_store import ConfigStore, config_store, sha256, store_key
from slurmstack.render.files import head_files, pool_files, render_cluster, role_files
from slurmstack.render.node import (
    AGENT_DIR,
    BOOTSTRAP_SOURCE,
    NODE_DIR,
    agent_files,
    agent_modules,
    node_config,
)
from slurmstack.render.roles import roles
from slurmstack.render.slurm import (
    CONTROLLER_SERVICE_PATH,
    CONTROLLER_TIMER_PATH,
    LNET_EFA_UNIT_PATH,
    SLURMD_UNIT_PATH,
    Ports,
    cgroup_conf,
    gres_conf,
    mount_unit_name,
    plugstack_conf,
    slurm_conf,
    slurm_conf_keys,
)
from slurmstack.render.templates import PACKAGE_DIR, templates_dir

__all__ = [
    "AGENT_DIR",
    "BOOTSTRAP_SOURCE",
    "CLOUD_INIT",
    "CONTROLLER_SERVICE_PATH",
    "CONTROLLER_TIMER_PATH",
    "LNET_EFA_UNIT_PATH",
    "NODE_DIR",
    "PACKAGE_DIR",
    "SLURMD_UNIT_PATH",
    "USER_DATA_LIMIT",
    "ConfigStore",
    "Ports",
    "accounting_config",
    "accounting_files",
    "agent_files",
    "agent_modules",
    "bootstrap_env",
    "bootstrap_source",
    "cgroup_conf",
    "config_store",
    "gres_conf",
    "head_files",
    "imds_firewall_files",
    "inline_contract",
    "mount_unit_name",
    "node_config",
    "plugstack_conf",
    "pool_files",
    "render_cluster",
    "role_files",
    "roles",
    "sha256",
    "slurm_conf",
    "slurm_conf_keys",
    "store_key",
    "templates_dir",
    "user_data",
]
