"""Every file a role receives through the config store (the cloud-init document aside), by
its absolute path on the node, and the whole cluster's render layout."""

from __future__ import annotations

from slurmstack.contract import (
    ENROOT_CONF_PATH,
    FABRIC_PROFILE_PATH,
    HEAD_ROLE,
    NCCL_CONF_PATH,
    NODE_CONFIG_PATH,
    SLURM_CONF_PATH,
    SLURM_DIR,
    SLURMCTLD_DROPIN_PATH,
    SLURMD_ELASTIC_DROPIN_SOURCE,
    TASK_PROLOG_PATH,
    is_login_role,
)
from slurmstack.plan import ClusterPlan, PoolPlan
from slurmstack.render import jobs, nccl, slurm
from slurmstack.render.accounting import accounting_files
from slurmstack.render.cloud_init import CLOUD_INIT, user_data
from slurmstack.render.monitoring import head_monitoring_files, pool_monitoring_files
from slurmstack.render.node import agent_files, node_config
from slurmstack.render.people import identities_file, login_files
from slurmstack.render.roles import login_pool_named, pool_named, roles
from slurmstack.render.topology import topology_files

from ..contract import dump_document


def head_files(plan: ClusterPlan) -> dict[str, str]:
    """Absolute node path -> text, for the head node (cloud-init document excluded)."""
    return {
        SLURM_CONF_PATH: slurm.slurm_conf(plan),
        f"{SLURM_DIR}/gres.conf": slurm.gres_conf(plan),
        f"{SLURM_DIR}/cgroup.conf": slurm.cgroup_conf(plan),
        f"{SLURM_DIR}/plugstack.conf": slurm.plugstack_conf(plan),
        SLURMCTLD_DROPIN_PATH: slurm.slurmctld_dropin(plan),
        slurm.CONTROLLER_SERVICE_PATH: slurm.controller_service(plan),
        slurm.CONTROLLER_TIMER_PATH: slurm.controller_timer(plan),
        NODE_CONFIG_PATH: dump_document(node_config(plan, None)),
        **slurm.power_programs(plan),
        **slurm.power_units(plan),
        **accounting_files(plan),
        **agent_files(),
        **jobs.head_jobs_files(plan),
        **jobs.ecr_token_units(plan, "head node"),
        **identities_file(plan),
        **head_monitoring_files(plan),
        **topology_files(plan),
    }


def pool_files(plan: ClusterPlan, pool: PoolPlan) -> dict[str, str]:
    """Absolute node path -> text, for a node of ``pool`` (cloud-init document excluded)."""
    files = {
        slurm.SLURMD_UNIT_PATH: slurm.slurmd_unit(plan, pool),
        TASK_PROLOG_PATH: nccl.task_prolog(pool),
        ENROOT_CONF_PATH: nccl.enroot_conf(pool),
        NODE_CONFIG_PATH: dump_document(node_config(plan, pool)),
        **agent_files(),
        **jobs.pool_jobs_files(plan, pool),
        **jobs.ecr_token_units(plan, f"node of pool {pool.name}"),
        **identities_file(plan),
        **pool_monitoring_files(plan, pool),
    }
    optional = {
        NCCL_CONF_PATH: nccl.nccl_conf(pool),
        slurm.LNET_EFA_UNIT_PATH: slurm.lnet_efa_unit(plan, pool),
        FABRIC_PROFILE_PATH: nccl.fabric_profile(pool),
        SLURMD_ELASTIC_DROPIN_SOURCE: slurm.slurmd_elastic_dropin(plan, pool),
    }
    files.update({path: text for path, text in optional.items() if text is not None})
    return dict(sorted(files.items()))


def role_files(plan: ClusterPlan, role: str) -> dict[str, str]:
    if role == HEAD_ROLE:
        return head_files(plan)
    if is_login_role(role):
        return login_files(plan, login_pool_named(plan, role))
    return pool_files(plan, pool_named(plan, role))


def _prefix(role: str) -> str:
    """head, pools/<pool>, login/<pool> (a login role is already its layout)."""
    if role == HEAD_ROLE or is_login_role(role):
        return role
    return f"pools/{role}"


def render_cluster(plan: ClusterPlan) -> dict[str, str]:
    """Every file a node receives, keyed by a relative path mirroring where it lands:
    "head/..." for the head node, "pools/<pool>/..." per pool, "login/<pool>/..." per login
    pool, the cloud-init documents at "<role>/cloud-init.yaml"."""
    out: dict[str, str] = {}
    for role in roles(plan):
        prefix = _prefix(role)
        out[f"{prefix}/{CLOUD_INIT}"] = user_data(plan, role)
        for path, text in role_files(plan, role).items():
            out[prefix + path] = text
    return dict(sorted(out.items()))
