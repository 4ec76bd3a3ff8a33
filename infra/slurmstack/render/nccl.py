"""The fabric's files on a pool's nodes: nccl.conf, the login shells' profile and the task
prolog (the pool's NCCL/libfabric environment), and enroot's configuration."""

from __future__ import annotations

from slurmstack.plan import PoolPlan
from slurmstack.render.templates import render_template
from slurmstack.rules.fabric import EnvTarget


def task_prolog(pool: PoolPlan) -> str:
    return render_template(
        "slurm/task-prolog.sh.j2", pool=pool, env=pool.env_for(EnvTarget.PROCESS)
    )


def nccl_conf(pool: PoolPlan) -> str | None:
    """nccl.conf where NCCL runs (accelerator pools) or has settings; None elsewhere."""
    if pool.gpu is None and not pool.env_for(EnvTarget.NCCL_CONF):
        return None
    return render_template("nccl/nccl.conf.j2", pool=pool, env=pool.env_for(EnvTarget.NCCL_CONF))


def fabric_profile(pool: PoolPlan) -> str | None:
    """The profile.d script of a pool with a process environment; None elsewhere."""
    if not pool.env_for(EnvTarget.PROCESS):
        return None
    return render_template("nccl/fabric.sh.j2", pool=pool, env=pool.env_for(EnvTarget.PROCESS))


def enroot_conf(pool: PoolPlan) -> str:
    return render_template("enroot/enroot.conf.j2", pool=pool)
