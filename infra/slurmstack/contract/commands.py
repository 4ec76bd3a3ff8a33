"""The agent's subcommands as units, cloud-init, SSM documents and slurmctld call them, and the
programs and timings of the head's loops (reaping, power saving)."""

from __future__ import annotations

import enum

from .paths import AGENT_PATH, SLURMD_UNIT, STATE_SAVE_LOCATION, dropin_path

__all__ = [
    "CONTROLLER_INTERVAL_SECONDS",
    "HEARTBEAT_PATH",
    "LAUNCH_RETRY_MAX_SECONDS",
    "LAUNCH_RETRY_SECONDS",
    "ORPHAN_GRACE_SECONDS",
    "POWER_ENV_PATH",
    "POWER_LOG_PATH",
    "POWER_PROGRAMS",
    "POWER_STATE_PATH",
    "POWER_SWEEP_INTERVAL_SECONDS",
    "REAPER_GRACE_SECONDS",
    "RESUME_FAIL_PROGRAM",
    "RESUME_PROGRAM",
    "SLURMCTLD_TIMEOUT_WITH_BACKUP_SECONDS",
    "SLURMD_ELASTIC_DROPIN_PATH",
    "SLURMD_ELASTIC_DROPIN_SOURCE",
    "SUSPEND_PROGRAM",
    "Command",
    "agent_command",
]

# --- the agent's subcommands, as units, cloud-init and SSM documents call them -------------


class Command(enum.StrEnum):
    """``slurmstack-node`` subcommands (slurmstack.node.commands maps each to its handler)."""

    SYNC_CONFIG = "sync-config"
    PARAMS = "params"
    HEAD_ADDRESS = "head-address"
    MUNGE_KEY = "munge-key"
    HEALTH = "health"
    SCRATCH = "scratch"
    MOUNTS = "mounts"
    S3_MOUNTS = "s3-mounts"
    LNET_EFA = "lnet-efa"
    STATE_VOLUME = "state-volume"
    HANDBACK = "handback"
    FULL_SAVE = "full-save"
    REAP = "reap"
    POWER_RESUME = "power-resume"
    POWER_SUSPEND = "power-suspend"
    POWER_RESUME_FAIL = "power-resume-fail"
    POWER_SWEEP = "power-sweep"
    HEALTH_CHECK = "health-check"
    SHIP_LOGS = "ship-logs"
    CONTROL = "control"
    BREAKER = "breaker"
    ACCOUNTING_DB = "accounting-db"
    ACCOUNTING_APPLY = "accounting-apply"
    USAGE = "usage"
    # Jobs, containers and acceptance (slurmstack.node.workload).
    NODE_CHECK = "node-check"
    NCCL_VERDICT = "nccl-verdict"
    ACCEPT = "accept"
    JOB_DIRS = "job-dirs"
    ECR_TOKEN = "ecr-token"
    ECR_LOGIN = "ecr-login"
    # People (slurmstack.node.people).
    IDENTITIES = "identities"
    # Observability (slurmstack.node.observe).
    NODE_METRICS = "node-metrics"
    HEAD_METRICS = "head-metrics"
    GPU_JOB_START = "gpu-job-start"
    GPU_JOB_END = "gpu-job-end"
    ALERT_RELAY = "alert-relay"
    FOLLOW_LOGS = "follow-logs"
    PROMETHEUS_CONFIG = "prometheus-config"
    DIAG = "diag"
    # Rollouts and permissions (slurmstack.node.boot.join_hook, slurmstack.node.power.launch_check).
    JOINED = "joined"
    LAUNCH_CHECK = "launch-check"
    PRUNE_IMAGES = "prune-images"


def agent_command(command: Command, *args: str) -> str:
    """The command line that runs ``command`` by the agent's absolute path (systemd units and
    Run Command do not search the login PATH)."""
    return " ".join((AGENT_PATH, command.value, *args))


# The controller's reaping: how long a dead node's record stays DOWN before it is deleted (long
# enough for a reboot, which keeps the address and so the name).
REAPER_GRACE_SECONDS = 900
# How often the controller's timer runs it: a node whose instance is gone is set DOWN (its jobs
# requeued) within this, and a terminating instance's lifecycle action is looked at this often.
CONTROLLER_INTERVAL_SECONDS = 60


# --- Slurm's power saving (elastic nodes) ----------------------------------------------------

# The programs slurmctld runs (ResumeProgram, SuspendProgram, ResumeFailProgram): one-line
# launchers of the agent's power-* subcommands, as slurmctld passes a program no arguments
# of its own and wants an absolute path that only its owner may write.
RESUME_PROGRAM = "/usr/local/bin/slurmstack-resume"
SUSPEND_PROGRAM = "/usr/local/bin/slurmstack-suspend"
RESUME_FAIL_PROGRAM = "/usr/local/bin/slurmstack-resume-fail"
POWER_PROGRAMS = {
    RESUME_PROGRAM: Command.POWER_RESUME,
    SUSPEND_PROGRAM: Command.POWER_SUSPEND,
    RESUME_FAIL_PROGRAM: Command.POWER_RESUME_FAIL,
}
# slurmctld runs them as SlurmUser with nothing but SLURM_CONF in their environment: they log
# next to slurmctld's own log (a directory SlurmUser writes), keep the pools' launch retry
# state in slurmctld's state directory (SlurmUser's, on the state volume), and take extra
# environment (an HTTPS proxy, an EC2 endpoint) from POWER_ENV_PATH, when it exists.
POWER_LOG_PATH = "/var/log/slurm/slurmstack-power.log"
POWER_STATE_PATH = f"{STATE_SAVE_LOCATION}/slurmstack-power.json"
POWER_ENV_PATH = "/etc/slurmstack/power.env"
# An elastic node's slurmd is a CLOUD node's (slurmd -N <name>, no -Z): this drop-in, sent to
# every node of an elastic pool, is put in place by `params` on the elastic instances only.
SLURMD_ELASTIC_DROPIN_SOURCE = "/etc/slurmstack/slurmd-elastic.conf"
SLURMD_ELASTIC_DROPIN_PATH = dropin_path(SLURMD_UNIT, "elastic")
# How often the head's sweep runs (slurmstack-power.timer): it returns elastic nodes to
# service once their pool's launch retry is due and terminates instances no node owns.
POWER_SWEEP_INTERVAL_SECONDS = 60
# After a failed launch a pool waits LAUNCH_RETRY_SECONDS, doubled after each further failure
# up to LAUNCH_RETRY_MAX_SECONDS, before its nodes are offered to Slurm again.
LAUNCH_RETRY_SECONDS = 120
LAUNCH_RETRY_MAX_SECONDS = 1800
# An elastic instance no node runs on (its address is no node's) is terminated by the sweep
# this long after its launch: a resume sets its nodes' addresses within seconds of the launch.
ORPHAN_GRACE_SECONDS = 600

# --- the backup controller (head_node.backup) --------------------------------------------

# The backup takes control once the head's slurmctld has been silent this long (SlurmctldTimeout
# in slurm.conf; Slurm's default is 120 s). Why 60: slurmstack.plan.head.
SLURMCTLD_TIMEOUT_WITH_BACKUP_SECONDS = 60
# The controller in control writes StateSaveLocation/heartbeat every min(SlurmctldTimeout / 4,
# 30) s: its time and its index in the SlurmctldHost list (0 the head, 1 the backup), each a
# big-endian 64-bit integer (src/slurmctld/heartbeat.c, 22.05 to 26.05). The head's loops that
# must not run twice (the repair controller, the elastic sweep, the accounting apply) run on
# the controller it names, and on neither while it is older than SlurmctldTimeout.
HEARTBEAT_PATH = f"{STATE_SAVE_LOCATION}/heartbeat"
