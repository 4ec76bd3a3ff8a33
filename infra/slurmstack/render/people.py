"""People's files: identities.json for every role, and a login pool's own files (its node.json,
sshd's drop-in, the sackd unit). The login pool's cloud-init document is render.cloud_init's."""

from __future__ import annotations

from slurmstack.contract import (
    IDENTITIES_PATH,
    LOGIN_HOST_KEY_PATH,
    NODE_CONFIG_PATH,
    SSHD_DROPIN_PATH,
    NodeConfig,
    dump_document,
    node_name_prefix,
    unit_path,
)
from slurmstack.contract import SACKD_UNIT as SACKD
from slurmstack.plan import ClusterPlan, LoginPoolPlan, identities
from slurmstack.render.monitoring import login_monitoring_files
from slurmstack.render.node import agent_files, file_system_mounts, s3_mount
from slurmstack.render.slurm import Ports
from slurmstack.render.templates import render_template

SACKD_UNIT_PATH = unit_path(SACKD)
# Slurm's own install (the image builds it with prefix /usr, as the distribution's packages).
SACKD_PROGRAM = "/usr/sbin/sackd"


def identities_file(plan: ClusterPlan, login_pool: str | None = None) -> dict[str, str]:
    """identities.json of a role (every role has one: the same people everywhere)."""
    return {IDENTITIES_PATH: dump_document(identities(plan.spec, login_pool))}


def login_node_config(plan: ClusterPlan, pool: LoginPoolPlan) -> NodeConfig:
    return NodeConfig(
        cluster=plan.name,
        region=plan.region,
        role=pool.role,
        parameter_prefix=plan.parameter_prefix,
        munge_secret=plan.munge_secret_name,
        mounts=file_system_mounts(plan.mounts),
        s3_mounts=tuple(s3_mount(m, None) for m in plan.s3_mounts),  # no scratch: no cache
        backup=plan.head.backup,
        node_name_prefix=node_name_prefix(pool.name),
        health=plan.health.node_health(0, 0, 0),
    )


def login_files(plan: ClusterPlan, pool: LoginPoolPlan) -> dict[str, str]:
    """Absolute node path -> text, for a node of login pool ``pool`` (cloud-init aside)."""
    files = {
        NODE_CONFIG_PATH: dump_document(login_node_config(plan, pool)),
        SACKD_UNIT_PATH: render_template(
            "systemd/slurmstack-sackd.service.j2",
            plan=plan,
            pool=pool,
            ports=Ports(),
            sackd=SACKD_PROGRAM,
        ),
        SSHD_DROPIN_PATH: render_template(
            "ssh/sshd-login.conf.j2",
            plan=plan,
            pool=pool,
            directory=plan.spec.directory,
            host_key=LOGIN_HOST_KEY_PATH,
        ),
        **identities_file(plan, pool.name),
        **agent_files(),
        **login_monitoring_files(plan),
    }
    return dict(sorted(files.items()))
