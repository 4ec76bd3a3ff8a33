"""Observability: the exporters' ports, where the agent leaves its metrics and the scrape
targets, the names of the metrics it writes (the alert rules and dashboards read them), the
GPU-to-job files the DCGM exporter labels its series with, and the alert event's schema."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .commands import POWER_LOG_PATH
from .paths import (
    CONTROLLER_LOG_PATH,
    EVENTS_LOG_PATH,
    HEALTH_LOG_PATH,
    SLURMCTLD_LOG_PATH,
    SLURMD_LOG_PATH,
    SLURMDBD_LOG_FILE,
    STATE_VOLUME_MOUNT,
)

__all__ = [
    "ALERTMANAGER_PORT",
    "ALERTMANAGER_UNIT",
    "ALERT_EVENT_DETAIL_TYPE",
    "ALERT_EVENT_SCHEMA_VERSION",
    "ALERT_EVENT_SOURCE",
    "ALERT_RELAY_PORT",
    "ALERT_RELAY_UNIT",
    "AUTH_LOG_PATH",
    "DCGM_EXPORTER_PORT",
    "DCGM_EXPORTER_UNIT",
    "EPILOG_PROGRAM",
    "GPU_JOB_DIR",
    "GRAFANA_PORT",
    "GRAFANA_UNIT",
    "HEAD_LOG_FILES",
    "LOGIN_LOG_FILES",
    "LOGIN_TARGETS_FILE",
    "LOG_SHIPPER_INTERVAL_SECONDS",
    "LOG_SHIPPER_STATE_PATH",
    "LOG_SHIPPER_UNIT",
    "METRICS_DIR",
    "METRICS_TIMER",
    "MONITORING_CONFIG_PATH",
    "MONITORING_UNITS",
    "NODE_EXPORTER_PORT",
    "NODE_EXPORTER_UNIT",
    "PROLOG_PROGRAM",
    "PROMETHEUS_DATA_DIR",
    "PROMETHEUS_DIR",
    "PROMETHEUS_LIVE_CONFIG",
    "PROMETHEUS_LOCAL_DATA_DIR",
    "PROMETHEUS_PORT",
    "PROMETHEUS_RENDERED_CONFIG",
    "PROMETHEUS_UNIT",
    "REMOTE_WRITE_URL_PLACEHOLDER",
    "SCRAPE_TARGETS_DIR",
    "SLURMCTLD_METRICS_PATHS",
    "SLURM_NATIVE_METRICS_VERSION",
    "WORKER_LOG_FILES",
    "LogSource",
    "Metric",
    "MonitoringConfig",
    "PoolPrices",
    "alert_topic_name",
    "log_group_name",
    "log_group_prefix",
]

# Ports on every node (node_exporter's and dcgm-exporter's defaults) and on the head (the
# Prometheus, Alertmanager and Grafana defaults; the relay's is ours). Only node_exporter and
# dcgm-exporter listen beyond loopback: the head's servers are reached through Session
# Manager's port forwarding.
NODE_EXPORTER_PORT = 9100
DCGM_EXPORTER_PORT = 9400
PROMETHEUS_PORT = 9090
ALERTMANAGER_PORT = 9093
GRAFANA_PORT = 3000
ALERT_RELAY_PORT = 9097

# The monitoring units render writes (render/monitoring.py) and sync-config enables wherever
# they are installed and merely disabled: on a new node, and on one that got them from a
# configuration change (a masked unit stays off). The metrics timer runs the agent's
# node-metrics (and head-metrics on the head) at the scrape interval.
NODE_EXPORTER_UNIT = "slurmstack-node-exporter.service"
DCGM_EXPORTER_UNIT = "slurmstack-dcgm-exporter.service"
PROMETHEUS_UNIT = "slurmstack-prometheus.service"
ALERTMANAGER_UNIT = "slurmstack-alertmanager.service"
GRAFANA_UNIT = "slurmstack-grafana.service"
ALERT_RELAY_UNIT = "slurmstack-alert-relay.service"
METRICS_TIMER = "slurmstack-metrics.timer"
LOG_SHIPPER_UNIT = "slurmstack-log-shipper.service"  # every node's `follow-logs`
MONITORING_UNITS = (
    NODE_EXPORTER_UNIT,
    DCGM_EXPORTER_UNIT,
    PROMETHEUS_UNIT,
    ALERTMANAGER_UNIT,
    ALERT_RELAY_UNIT,
    GRAFANA_UNIT,
    METRICS_TIMER,
    LOG_SHIPPER_UNIT,
)

# The agent's metrics: files node_exporter's textfile collector serves (*.prom, written whole
# and renamed into place, so a scrape never reads half a file).
METRICS_DIR = "/var/lib/slurmstack/metrics"
# The head's monitoring: what the agent needs to know (monitoring.json, written by render),
# Prometheus's configuration and the targets the agent keeps for it (file_sd: Prometheus
# rereads them when they change, no restart), and its samples on the state volume (a replaced
# head keeps its history).
MONITORING_CONFIG_PATH = "/etc/slurmstack/monitoring.json"
PROMETHEUS_DIR = "/etc/slurmstack/prometheus"
SCRAPE_TARGETS_DIR = f"{PROMETHEUS_DIR}/targets"
# prometheus.yml as rendered (the config store's copy Prometheus reads, or the agent's source
# for the live one).
PROMETHEUS_RENDERED_CONFIG = f"{PROMETHEUS_DIR}/prometheus.yml"
# Login nodes are no Slurm nodes: the head's agent finds them by their tags in EC2 (running
# instances of the cluster's login pools) and lists them here, as file_sd reads them.
LOGIN_TARGETS_FILE = f"{SCRAPE_TARGETS_DIR}/login.json"
# observability.managed_prometheus: the remote-write URL is known at deploy time only (the
# workspace's id), so the rendered configuration carries this stand-in, and the Prometheus
# unit's start writes the live configuration with the REMOTE_WRITE_URL parameter in its place
# (`slurmstack-node prometheus-config`). A URL of the reserved .invalid domain: the rendered
# file stays a configuration promtool accepts, and one that can never reach anything.
REMOTE_WRITE_URL_PLACEHOLDER = "https://remote-write.slurmstack.invalid/api/v1/remote_write"
# The live configuration it writes (anew at every start; it holds an address, no secret).
PROMETHEUS_LIVE_CONFIG = "/run/slurmstack/prometheus.yml"
PROMETHEUS_DATA_DIR = f"{STATE_VOLUME_MOUNT}/prometheus"
# With a backup controller (head_node.backup) the state mount is EFS, shared by both: each
# controller's Prometheus keeps its samples on its own root volume instead (Prometheus' storage
# needs a POSIX local file system, and holds a lock only one server gets).
PROMETHEUS_LOCAL_DATA_DIR = "/var/lib/slurmstack/prometheus"
# dcgm-exporter's --hpc-job-mapping-dir: one file per GPU index holding the ids of the jobs
# that hold it; the prolog writes it, the epilog empties it, the exporter labels the GPU's
# series hpc_job="<id>".
GPU_JOB_DIR = "/run/slurmstack/gpu-jobs"
# Slurm's Prolog and Epilog on the workers: launchers of `gpu-job-start` and `gpu-job-end`.
PROLOG_PROGRAM = "/usr/local/sbin/slurmstack-prolog"
EPILOG_PROGRAM = "/usr/local/sbin/slurmstack-epilog"
# Slurm's own OpenMetrics endpoints on slurmctld's port (Slurm 25.11 and later,
# MetricsType=metrics/openmetrics; doc/html/metrics.shtml). Older Slurm has none: the head's
# agent writes the same names itself (slurmstack.node.observe.slurm_metrics).
SLURM_NATIVE_METRICS_VERSION = (25, 11)
SLURMCTLD_METRICS_PATHS = (
    "/metrics/nodes",
    "/metrics/jobs",
    "/metrics/partitions",
    "/metrics/scheduler",
)

# Alerts as EventBridge events (docs/observing.md, "Events"): PutEvents' Source and
# DetailType; the detail carries schema_version, so a consumer can tell a change.
ALERT_EVENT_SOURCE = "slurmstack"
ALERT_EVENT_DETAIL_TYPE = "slurmstack alert"
ALERT_EVENT_SCHEMA_VERSION = 1


def alert_topic_name(cluster: str) -> str:
    """The cluster's SNS topic: every alert notification (the relay), the definition's email."""
    return f"{cluster}-alerts"


class LogSource(enum.StrEnum):
    """The logs the cluster keeps in CloudWatch Logs, one log group each (a node's stream is
    named by its instance id), kept observability.log_retention_days."""

    SLURMCTLD = "slurmctld"  # the head
    SLURMDBD = "slurmdbd"  # the head, with accounting
    SLURMD = "slurmd"  # every worker
    AGENT = "agent"  # every node: the node agent's programs (controller, power, boot, ...)
    HEALTH_CHECK = "health-check"  # every worker: Slurm's HealthCheckProgram
    LOGIN = "login"  # login nodes: sshd's and sudo's authentication log (with login pools)


def log_group_prefix(cluster: str) -> str:
    return f"/slurmstack/{cluster}/"


def log_group_name(cluster: str, source: LogSource) -> str:
    return f"{log_group_prefix(cluster)}{source.value}"


# The files each kind of node follows into its LogSource's group (`follow-logs`, a service on
# every node): new complete lines, each file from where the last pass stopped. The agent's
# programs write their own files (the controller's decisions, the events, the power
# programs'); what they print goes to the journal, which stays on the node.
HEAD_LOG_FILES = {
    LogSource.SLURMCTLD: (SLURMCTLD_LOG_PATH,),
    LogSource.SLURMDBD: (SLURMDBD_LOG_FILE,),
    LogSource.AGENT: (CONTROLLER_LOG_PATH, EVENTS_LOG_PATH, POWER_LOG_PATH),
}
WORKER_LOG_FILES = {
    LogSource.SLURMD: (SLURMD_LOG_PATH,),
    LogSource.AGENT: (EVENTS_LOG_PATH,),
    LogSource.HEALTH_CHECK: (HEALTH_LOG_PATH,),
}
# A login node: its agent's events with every node's, and who logged in or used sudo (sshd's
# and sudo's lines, which rsyslog writes to auth.log on Ubuntu) in a group of its own, apart
# from the daemons' logs, as an audit trail that outlives the node.
AUTH_LOG_PATH = "/var/log/auth.log"
LOGIN_LOG_FILES = {
    LogSource.AGENT: (EVENTS_LOG_PATH,),
    LogSource.LOGIN: (AUTH_LOG_PATH,),
}
# Where each file was read up to (its inode and byte offset): survives the service's restarts
# and the node's reboots, so no line is sent twice.
LOG_SHIPPER_STATE_PATH = "/var/lib/slurmstack/log-shipper.json"
LOG_SHIPPER_INTERVAL_SECONDS = 5


class Metric(enum.StrEnum):
    """The metrics the agent writes (each file in METRICS_DIR). Gauges unless _total."""

    # Every node (`node-metrics`, on a timer, and the health check).
    HEALTH_CHECK_OK = "slurmstack_health_check_ok"  # {check}: 1 passed, 0 failed
    HEALTH_LAST_RUN = "slurmstack_health_last_run_timestamp_seconds"
    FILESYSTEM_MOUNTED = "slurmstack_filesystem_mounted"  # {mount, kind}
    FILESYSTEM_WRITABLE = "slurmstack_filesystem_writable"  # {mount, kind}
    EFA_PORT_ACTIVE = "slurmstack_efa_port_active"  # {device, port}
    EFA_COUNTER = "slurmstack_efa_hw_counter_total"  # {device, port, counter}: the driver's
    SPOT_NOTICE = "slurmstack_spot_interruption_notice"  # 1 once EC2 gave the notice
    # The head (`head-metrics`, on a timer): Slurm as slurmstack reads it.
    DAEMON_UP = "slurmstack_daemon_up"  # {daemon}: slurmctld, slurmdbd
    NODE_STATE = "slurmstack_node_state"  # {node, pool, state}: 1 for the node's base state
    NODE_DRAINED = "slurmstack_node_drained"  # {node, pool, check, remedy}: drained, and why
    # {node, pool}: GPUs Slurm gives the node (its GRES): Slurm's own slurm_node_gpus counts
    # them from TRES, which has gres/gpu only with accounting (0 on a cluster without).
    NODE_GPUS = "slurmstack_node_gpus"
    JOB_INFO = "slurmstack_job_info"  # {hpc_job, account, user, partition}: a running job
    JOB_GPUS = "slurmstack_job_gpus"  # {hpc_job}: GPUs the running job holds
    FAIRSHARE = "slurmstack_fairshare"  # {account, user}: sshare's FairShare factor
    GPU_PRICE = "slurmstack_gpu_price_usd_per_hour"  # {pool}: plan's price of one GPU-hour
    NODE_PRICE = "slurmstack_node_price_usd_per_hour"  # {node, pool}: a live node's price
    # The head's controller (each pass) and power programs.
    BREAKER_OPEN = "slurmstack_breaker_open"  # {pool}
    BREAKER_REPLACEMENTS = "slurmstack_breaker_recent_replacements"  # {pool}
    CONTROLLER_ACTIONS = "slurmstack_controller_actions_total"  # {action, ok}
    CONTROLLER_LAST_PASS = "slurmstack_controller_last_pass_timestamp_seconds"
    CAPACITY_BLOCK_END = "slurmstack_capacity_block_end_timestamp_seconds"  # {pool, reservation}
    LAUNCH_FAILURES = "slurmstack_launch_failures"  # {pool}: failed launches in a row
    LAUNCH_BACKOFF = "slurmstack_launch_backoff"  # {pool}: 1 while the pool waits to retry
    LAUNCH_RETRY_AT = "slurmstack_launch_retry_timestamp_seconds"  # {pool}


@dataclass(frozen=True)
class PoolPrices:
    """A pool's prices as plan has them (0 when plan has none)."""

    pool: str
    node_prefix: str
    gpus: int
    node_usd_per_hour: float


@dataclass(frozen=True)
class MonitoringConfig:
    """monitoring.json: what the head's agent needs for its metrics and targets."""

    cluster: str
    slurm_native_metrics: bool  # slurmctld serves SLURMCTLD_METRICS_PATHS
    accounting: bool  # slurmdbd runs: its daemon and fair share are reported
    head_usd_per_hour: float = 0.0
    prices: tuple[PoolPrices, ...] = ()
    event_bus: str = "default"  # where alerts go as events (the alert topic: a parameter)
    login_pools: tuple[str, ...] = ()  # scraped too: found in EC2 by their tags
