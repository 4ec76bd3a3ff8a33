"""Slurm's files: slurm.conf, gres.conf, cgroup.conf, plugstack.conf (the head node serves
them configless), and the systemd units of Slurm's daemons and of the head's controller."""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurmstack.checks.slurm import key_state
from slurmstack.contract import (
    CONTROLLER_INTERVAL_SECONDS,
    CONTROLLER_SERVICE,
    CONTROLLER_TIMER,
    DEEP_DIAGNOSTIC_SECONDS,
    LNET_EFA_UNIT,
    POWER_PROGRAMS,
    POWER_SERVICE,
    POWER_SWEEP_INTERVAL_SECONDS,
    POWER_TIMER,
    PYXIS_PLUGIN,
    REAPER_GRACE_SECONDS,
    RESUME_FAIL_PROGRAM,
    RESUME_PROGRAM,
    SLURM_USER,
    SLURMCTLD_PORT,
    SLURMD_PORT,
    SLURMD_UNIT,
    SRUN_PORT_RANGE,
    STATE_SAVE_LOCATION,
    STATE_VOLUME_MOUNT,
    SUSPEND_PROGRAM,
    backup_host,
    head_host,
    unit_path,
)
from slurmstack.plan import (
    RESUME_TIMEOUT_SECONDS,
    SUSPEND_TIMEOUT_SECONDS,
    ClusterPlan,
    PoolPlan,
    accounting_plan,
)
from slurmstack.plan.head import BACKUP_SLURMCTLD_TIMEOUT_SECONDS
from slurmstack.plan.health import REBOOT_TIMEOUT_SECONDS
from slurmstack.plan.observability import slurm_native_metrics
from slurmstack.plan.slurm import oldest_slurm_version
from slurmstack.plan.topology import block_pools, plan_topology
from slurmstack.render.templates import render_template
from slurmstack.slurm_releases import line_of

SLURMD_UNIT_PATH = unit_path(SLURMD_UNIT)
# The head node's controller (`slurmstack-node control`) and the timer that runs it.
CONTROLLER_SERVICE_PATH = unit_path(CONTROLLER_SERVICE)
CONTROLLER_TIMER_PATH = unit_path(CONTROLLER_TIMER)
# Pools that reach an EFA-enabled Lustre file system over EFA: LNet setup before the mount.
LNET_EFA_UNIT_PATH = unit_path(LNET_EFA_UNIT)
# The head's sweep of the elastic nodes (`slurmstack-node power-sweep`) and its timer.
POWER_SERVICE_PATH = unit_path(POWER_SERVICE)
POWER_TIMER_PATH = unit_path(POWER_TIMER)


# With a backup controller, systemd starts a stopped slurmctld again after this long: long
# enough for the head's slurmctld to be up after a handback (the backup then stands by), far
# under SlurmctldTimeout.
SLURMCTLD_RESTART_SECONDS = 15


@dataclass(frozen=True)
class Ports:
    slurmctld: int = SLURMCTLD_PORT
    slurmd: int = SLURMD_PORT
    srun: tuple[int, int] = SRUN_PORT_RANGE


def slurm_conf(plan: ClusterPlan) -> str:
    return render_template(
        "slurm/slurm.conf.j2",
        plan=plan,
        head_host=head_host(plan.name),
        backup_host=backup_host(plan.name),
        slurmctld_timeout=BACKUP_SLURMCTLD_TIMEOUT_SECONDS,
        ports=Ports(),
        state_save_location=STATE_SAVE_LOCATION,
        # slurm.conf has one ResumeTimeout for an elastic node's launch and a reboot's return.
        resume_timeout=max(RESUME_TIMEOUT_SECONDS, REBOOT_TIMEOUT_SECONDS),
        suspend_timeout=SUSPEND_TIMEOUT_SECONDS,
        accounting=accounting_plan(plan),
        health_check_timeout=health_check_timeout(plan),
        exclusive_partition=exclusive_partition(plan),
        native_metrics=slurm_native_metrics(plan.spec),
        topology=plan_topology(plan),
        block_pools=block_pools(plan),
    )


# Whole-node partitions: Slurm 26.05 replaces the partition's OverSubscribe=EXCLUSIVE with
# Exclusive=NODE (RELEASE_NOTES.md and slurm.conf(5) of 26.05: the old form is deprecated, and
# scontrol shows the partition as OverSubscribe=NO Exclusive=NODE); before 26.05 a partition has
# no Exclusive option.
EXCLUSIVE_SINCE = "26.05"


def exclusive_partition(plan: ClusterPlan) -> str:
    line = line_of(oldest_slurm_version(plan.spec))
    new = tuple(map(int, line.split("."))) >= tuple(map(int, EXCLUSIVE_SINCE.split(".")))
    return "Exclusive=NODE" if new else "OverSubscribe=EXCLUSIVE"


def health_check_timeout(plan: ClusterPlan) -> int | None:
    """HealthCheckTimeout, which Slurm 26.05 adds (default 60 s, and "should be less than
    HealthCheckInterval; an error is logged otherwise", slurm.conf(5) of 26.05): a second under
    the interval, at most the default. None before 26.05, whose slurmctld refuses the key."""
    if key_state("HealthCheckTimeout", line_of(oldest_slurm_version(plan.spec)))[0] != "live":
        return None
    return min(60, plan.health.check_interval_seconds - 1)


def gres_conf(plan: ClusterPlan) -> str:
    return render_template("slurm/gres.conf.j2", plan=plan)


def cgroup_conf(plan: ClusterPlan) -> str:
    return render_template("slurm/cgroup.conf.j2", plan=plan)


def plugstack_conf(plan: ClusterPlan) -> str:
    return render_template("slurm/plugstack.conf.j2", plan=plan, pyxis_plugin=PYXIS_PLUGIN)


def slurmctld_dropin(plan: ClusterPlan) -> str:
    return render_template(
        "systemd/slurmctld-dropin.conf.j2",
        plan=plan,
        state_volume_mount=STATE_VOLUME_MOUNT,
        restart_seconds=SLURMCTLD_RESTART_SECONDS,
    )


def controller_service(plan: ClusterPlan) -> str:
    return render_template(
        "systemd/slurmstack-controller.service.j2", plan=plan, grace_seconds=REAPER_GRACE_SECONDS
    )


def controller_timer(plan: ClusterPlan) -> str:
    return render_template(
        "systemd/slurmstack-controller.timer.j2",
        plan=plan,
        interval_seconds=CONTROLLER_INTERVAL_SECONDS,
    )


def power_programs(plan: ClusterPlan) -> dict[str, str]:
    """The head's ResumeProgram, SuspendProgram and ResumeFailProgram (node path -> text),
    when a pool is elastic: one-line launchers of the agent's power-* subcommands."""
    if not plan.elastic_pools:
        return {}
    keys = {
        RESUME_PROGRAM: "ResumeProgram",
        SUSPEND_PROGRAM: "SuspendProgram",
        RESUME_FAIL_PROGRAM: "ResumeFailProgram",
    }
    return {
        path: render_template(
            "node/power-program.j2", plan=plan, key=keys[path], command=command.value
        )
        for path, command in POWER_PROGRAMS.items()
    }


def power_units(plan: ClusterPlan) -> dict[str, str]:
    """The head's sweep of the elastic nodes and its timer, when a pool is elastic."""
    if not plan.elastic_pools:
        return {}
    return {
        POWER_SERVICE_PATH: render_template(
            "systemd/slurmstack-power.service.j2", plan=plan, slurm_user=SLURM_USER
        ),
        POWER_TIMER_PATH: render_template(
            "systemd/slurmstack-power.timer.j2",
            plan=plan,
            interval_seconds=POWER_SWEEP_INTERVAL_SECONDS,
        ),
    }


def slurmd_elastic_dropin(plan: ClusterPlan, pool: PoolPlan) -> str | None:
    """The slurmd drop-in of the pool's elastic nodes (CLOUD nodes); None if it has none."""
    if not pool.elastic:
        return None
    return render_template(
        "systemd/slurmstack-slurmd-elastic.conf.j2", plan=plan, pool=pool, ports=Ports()
    )


def slurmd_unit(plan: ClusterPlan, pool: PoolPlan) -> str:
    scratch = pool.local_scratch_mount
    return render_template(
        "systemd/slurmstack-slurmd.service.j2",
        plan=plan,
        pool=pool,
        ports=Ports(),
        scratch_mount_unit=mount_unit_name(scratch.path) if scratch is not None else None,
        # The boot health check's time: the deep diagnostic on a first boot, and the rest.
        start_timeout=DEEP_DIAGNOSTIC_SECONDS + 300,
        topology=plan_topology(plan).tree,
    )


def lnet_efa_unit(plan: ClusterPlan, pool: PoolPlan) -> str | None:
    """The LNet-over-EFA unit of a pool that reaches Lustre over EFA; None otherwise."""
    if not pool.lustre_over_efa or plan.lustre is None:
        return None
    return render_template(
        "systemd/slurmstack-lustre-efa.service.j2",
        plan=plan,
        pool=pool,
        lustre_mount=plan.lustre.spec.mount,
    )


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
