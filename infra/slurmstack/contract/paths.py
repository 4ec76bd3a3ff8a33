"""Where things land on a node: files, directories, systemd units, the state volume, the
health checks' and the jobs' places."""

from __future__ import annotations

__all__ = [
    "ACCEPTANCE_PATH",
    "ACCEPT_PATH",
    "ACCOUNTING_CONFIG_PATH",
    "ACCOUNTING_OWNED_PATH",
    "AGENT_LIB_DIR",
    "AGENT_PACKAGE",
    "AGENT_PATH",
    "BOOTSTRAP_DONE",
    "BOOTSTRAP_ENV_PATH",
    "BOOTSTRAP_FAILED",
    "BOOTSTRAP_PATH",
    "CHECKPOINTS_DIR_NAME",
    "CLOUD_INIT_OUTPUT_PATH",
    "CONTROLLER_LOG_PATH",
    "CONTROLLER_SERVICE",
    "CONTROLLER_STATE_PATH",
    "CONTROLLER_TIMER",
    "DBD_AGENT_WATCH_PATH",
    "DEEP_DIAGNOSTIC_SECONDS",
    "DISTRIBUTION_SLURMD_UNIT",
    "ECR_LOGIN_PATH",
    "ECR_PASSWORD_FILE",
    "ECR_REGISTRY_FILE",
    "ECR_TOKEN_DIR",
    "ECR_TOKEN_REFRESH_HOURS",
    "ECR_TOKEN_SERVICE",
    "ECR_TOKEN_TIMER",
    "ENROOT_CONF_PATH",
    "ENROOT_RUNTIME_DIR",
    "ENROOT_SUBDIRS",
    "EVENTS_LOG_PATH",
    "FABRIC_PROFILE_PATH",
    "FULL_SAVE_ASKED_PATH",
    "HEALTH_CHECK_PROGRAM",
    "HEALTH_DIR",
    "HEALTH_LOG_PATH",
    "IMDS_FIREWALL_RULES_PATH",
    "IMDS_FIREWALL_UNIT",
    "JOBS_DIR",
    "JOBS_LIB_DIR",
    "KERNEL_LOG_PATH",
    "LNET_EFA_UNIT",
    "LOG_DIR",
    "MARIADB_CONF_PATH",
    "MARIADB_DATA_DIR",
    "MARIADB_DROPIN_PATH",
    "MARIADB_SOCKET",
    "MARIADB_UNIT",
    "MUNGE_UNIT",
    "NCCL_CONF_PATH",
    "NCCL_TESTS_DIR",
    "NODE_CONFIG_PATH",
    "NODE_ENV_PATH",
    "PARAMETERS_CACHE_PATH",
    "POWER_SERVICE",
    "POWER_TIMER",
    "REBOOT_PROGRAM",
    "SLURMCTLD_DROPIN_PATH",
    "SLURMCTLD_LOG_PATH",
    "SLURMCTLD_UNIT",
    "SLURMDBD_CONF_PATH",
    "SLURMDBD_CONF_RENDERED_PATH",
    "SLURMDBD_DROPIN_PATH",
    "SLURMDBD_LOG_FILE",
    "SLURMDBD_PID_FILE",
    "SLURMDBD_UNIT",
    "SLURMD_LOG_PATH",
    "SLURMD_UNIT",
    "SLURM_CONF_PATH",
    "SLURM_DIR",
    "STATE_SAVE_LOCATION",
    "STATE_VOLUME_DEVICE",
    "STATE_VOLUME_MOUNT",
    "SYSTEMD_DIR",
    "TASK_PROLOG_PATH",
    "TOPOLOGY_ASKED_PATH",
    "container_root",
    "dropin_path",
    "unit_path",
]

# --- where things land on a node -------------------------------------------------------

# The node agent: its launcher, and the tree it runs (this module and slurmstack/node, as
# the package has them) below AGENT_LIB_DIR.
AGENT_PATH = "/usr/local/bin/slurmstack-node"
AGENT_LIB_DIR = "/usr/local/lib/slurmstack"
AGENT_PACKAGE = "slurmstack"
# The first-boot runner and the markers it leaves; the head's apply-config document reads them.
BOOTSTRAP_PATH = "/usr/local/sbin/slurmstack-bootstrap"
BOOTSTRAP_DONE = "/var/lib/slurmstack/bootstrap.done"
BOOTSTRAP_FAILED = "/var/lib/slurmstack/bootstrap.failed"
# Written by cloud-init (BootstrapEnv), by render (NodeConfig) and by the agent (NodeEnv).
BOOTSTRAP_ENV_PATH = "/etc/slurmstack/bootstrap.env"
NODE_CONFIG_PATH = "/etc/slurmstack/node.json"
NODE_ENV_PATH = "/etc/slurmstack/node.env"
# The deploy-time parameters as read at boot (DeployValues), on /run: read again every boot.
PARAMETERS_CACHE_PATH = "/run/slurmstack/parameters.json"
TASK_PROLOG_PATH = "/etc/slurmstack/task-prolog.sh"
IMDS_FIREWALL_RULES_PATH = "/etc/slurmstack/imds-firewall.nft"
SLURM_DIR = "/etc/slurm"
SLURM_CONF_PATH = f"{SLURM_DIR}/slurm.conf"
SLURMD_LOG_PATH = "/var/log/slurm/slurmd.log"  # SlurmdLogFile
SLURMCTLD_LOG_PATH = "/var/log/slurm/slurmctld.log"  # SlurmctldLogFile
SYSTEMD_DIR = "/etc/systemd/system"
NCCL_CONF_PATH = "/etc/nccl.conf"
FABRIC_PROFILE_PATH = "/etc/profile.d/slurmstack-fabric.sh"
ENROOT_CONF_PATH = "/etc/enroot/enroot.conf"

# systemd units slurmstack installs or starts.
SLURMCTLD_UNIT = "slurmctld.service"
MUNGE_UNIT = "munge.service"
SLURMD_UNIT = "slurmstack-slurmd.service"  # a worker's slurmd (dynamic, configless)
DISTRIBUTION_SLURMD_UNIT = "slurmd.service"  # Debian/Ubuntu's own, unused on workers
# The head node's one day-2 loop (slurmstack.node.controller), run by its timer.
CONTROLLER_SERVICE = "slurmstack-controller.service"
CONTROLLER_TIMER = "slurmstack-controller.timer"
LNET_EFA_UNIT = "slurmstack-lustre-efa.service"
IMDS_FIREWALL_UNIT = "slurmstack-imds-firewall.service"
POWER_SERVICE = "slurmstack-power.service"  # the head's sweep of elastic nodes
POWER_TIMER = "slurmstack-power.timer"


def unit_path(unit: str) -> str:
    return f"{SYSTEMD_DIR}/{unit}"


def dropin_path(unit: str, name: str) -> str:
    return f"{SYSTEMD_DIR}/{unit}.d/{name}.conf"


SLURMCTLD_DROPIN_PATH = f"{SYSTEMD_DIR}/{SLURMCTLD_UNIT}.d/slurmstack.conf"

# The head node's Slurm state: an EBS volume attached under STATE_VOLUME_DEVICE (on Nitro it
# appears as an NVMe disk whose controller reports that name), mounted at STATE_VOLUME_MOUNT;
# Slurm's files live in a subdirectory, apart from the file system's root and lost+found.
STATE_VOLUME_DEVICE = "/dev/sdf"
STATE_VOLUME_MOUNT = "/var/spool/slurmctld"
STATE_SAVE_LOCATION = f"{STATE_VOLUME_MOUNT}/state"

# Accounting on the head node. The rendered slurmdbd.conf holds no password: the agent
# (`accounting-db`) writes the live one, 0600 and owned by SlurmUser as slurmdbd demands, from
# it and the secret. slurmdbd's pid file is in its RuntimeDirectory (the 23.11 unit runs it as
# SlurmUser, who cannot write /run itself), its log beside slurmctld's.
ACCOUNTING_CONFIG_PATH = "/etc/slurmstack/accounting.json"  # AccountingConfig, written by render
SLURMDBD_CONF_RENDERED_PATH = "/etc/slurmstack/slurmdbd.conf"
SLURMDBD_CONF_PATH = f"{SLURM_DIR}/slurmdbd.conf"
SLURMDBD_PID_FILE = "/run/slurmdbd/slurmdbd.pid"
SLURMDBD_LOG_FILE = "/var/log/slurm/slurmdbd.log"
SLURMDBD_UNIT = "slurmdbd.service"
SLURMDBD_DROPIN_PATH = f"{SYSTEMD_DIR}/{SLURMDBD_UNIT}.d/slurmstack.conf"
# The local database: Debian's and Ubuntu's MariaDB. Its settings sort after their
# 50-server.cnf (so its datadir wins); its socket is theirs, which slurmdbd's "localhost"
# reaches too (MariaDB's client library default).
MARIADB_UNIT = "mariadb.service"
MARIADB_DROPIN_PATH = f"{SYSTEMD_DIR}/{MARIADB_UNIT}.d/slurmstack.conf"
MARIADB_CONF_PATH = "/etc/mysql/mariadb.conf.d/90-slurmstack.cnf"
MARIADB_SOCKET = "/run/mysqld/mysqld.sock"
# On the state volume, which outlives the instance: a replacement head mounts it and finds
# the database, and the record of what slurmstack created in it (accounting-apply), as they were.
MARIADB_DATA_DIR = f"{STATE_VOLUME_MOUNT}/mariadb"
ACCOUNTING_OWNED_PATH = f"{STATE_VOLUME_MOUNT}/slurmstack/accounting-owned.json"
# Slurm's HealthCheckProgram: run by slurmd with no arguments and no PATH, only
# SLURMD_NODENAME in its environment, killed after 60 s (slurmd.c, run_script_health_check).
HEALTH_CHECK_PROGRAM = "/usr/local/sbin/slurmstack-health-check"
# DCGM's level-2 diagnostic at an instance's first boot, bounded (slurmd's unit gives its
# ExecStartPre this and more).
DEEP_DIAGNOSTIC_SECONDS = 1200
# slurmctld's `scontrol reboot` runs this on the node (Ubuntu's systemd reboot).
REBOOT_PROGRAM = "/usr/sbin/reboot"
# A node's health state: the kernel log position already read, the deep diagnostic's pass.
HEALTH_DIR = "/var/lib/slurmstack/health"
# Where the node reads XIDs: the kernel's log records, each with a sequence number.
KERNEL_LOG_PATH = "/dev/kmsg"
LOG_DIR = "/var/log/slurmstack"
HEALTH_LOG_PATH = f"{LOG_DIR}/health.log"  # every check's findings, on the node
CONTROLLER_LOG_PATH = f"{LOG_DIR}/controller.log"  # every decision and action, on the head
# What an operator must hear about (a pool the head may not launch, ...): JSON lines
# (slurmstack.node.events).
EVENTS_LOG_PATH = f"{LOG_DIR}/events.log"
# The controller's memory (replacements per pool, the breakers, reboots it issued): on the
# head's state volume, so a replaced head keeps it.
CONTROLLER_STATE_PATH = f"{STATE_VOLUME_MOUNT}/slurmstack/controller.json"
# When the controller last asked EC2 where each unplaced instance sits (instance id -> time):
# one that got no answer yet is asked again only after a while (node.controller.place).
TOPOLOGY_ASKED_PATH = f"{STATE_VOLUME_MOUNT}/slurmstack/topology-asked.json"
# When the controller last asked slurmctld for a full state save (node.controller.full_save).
FULL_SAVE_ASKED_PATH = f"{STATE_VOLUME_MOUNT}/slurmstack/full-save-asked"
# The accounting agent's queue as the controller last saw it (node.controller.dbd_agent).
DBD_AGENT_WATCH_PATH = f"{STATE_VOLUME_MOUNT}/slurmstack/dbd-agent-watch.json"
CLOUD_INIT_OUTPUT_PATH = "/var/log/cloud-init-output.log"
# node from the config store: one directory per pool, the programs they run in lib/, and
# acceptance.json (the pools' expectations: GPUs, EFA devices, mounts, all-reduce threshold).
# Under /usr/local like the agent: every node has it at the same path, so a job's steps find
# the programs wherever they run, and no shared file system is needed for them.
JOBS_DIR = "/usr/local/share/slurmstack/jobs"
JOBS_LIB_DIR = f"{JOBS_DIR}/lib"
ACCEPTANCE_PATH = f"{JOBS_DIR}/acceptance.json"
# Commands for users (launchers of the agent's subcommands).
ACCEPT_PATH = "/usr/local/bin/slurmstack-accept"
ECR_LOGIN_PATH = "/usr/local/bin/slurmstack-ecr-login"
# nccl-tests, baked into the NVIDIA images (templates/image/build.sh).
NCCL_TESTS_DIR = "/usr/local/libexec/nccl-tests"
# Checkpoints of the example jobs on the shared file system: <mount>/CHECKPOINTS_DIR_NAME, made
# world-writable and sticky (like /tmp) by the head's `job-dirs` step.
CHECKPOINTS_DIR_NAME = "checkpoints"
# The account's ECR: a root timer on every node keeps a pull token here (the registry's host
# and its password, readable by job users, who cannot reach the instance role); a user's
# enroot reads it through the line `slurmstack-ecr-login` adds to their enroot credentials.
ECR_TOKEN_DIR = "/run/slurmstack/ecr"
ECR_REGISTRY_FILE = f"{ECR_TOKEN_DIR}/registry"
ECR_PASSWORD_FILE = f"{ECR_TOKEN_DIR}/password"
ECR_TOKEN_SERVICE = "slurmstack-ecr-token.service"
ECR_TOKEN_TIMER = "slurmstack-ecr-token.timer"
# ECR tokens last 12 hours (ECR API reference, GetAuthorizationToken); renewed at half that.
ECR_TOKEN_REFRESH_HOURS = 6
# enroot's directories (enroot.conf): each user's runtime directory below ENROOT_RUNTIME_DIR,
# and their images, layer cache and temporary files below the container root's subdirectories,
# all made world-writable and sticky before every slurmd start (`job-dirs`): enroot creates a
# directory per user in them itself.
ENROOT_RUNTIME_DIR = "/run/enroot"
ENROOT_SUBDIRS = ("data", "cache", "tmp")


def container_root(scratch_mount: str | None) -> str:
    """Where enroot keeps images and unpacked containers: large and node-local, so on the
    NVMe scratch when the pool has it, else on the root volume."""
    return f"{scratch_mount}/enroot" if scratch_mount else "/var/lib/enroot"
