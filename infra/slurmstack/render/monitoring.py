"""The monitoring files (docs/observing.md). Every node: node_exporter (its textfile collector
serving the agent's metrics) and the agent's metrics timer; a GPU pool's nodes dcgm-exporter
with the GPU-to-job files and the Prolog and Epilog that keep them. The head: Prometheus
(targets from the agent's file_sd files, the alert rules, retention from the definition, its
samples on the state volume), Alertmanager (to the alert relay), the relay, Grafana (provisioned
with the datasource and the dashboards) and monitoring.json for the agent."""

from __future__ import annotations

from typing import Any

from slurmstack.contract import (
    ALERT_RELAY_UNIT,
    ALERTMANAGER_PORT,
    ALERTMANAGER_UNIT,
    DCGM_EXPORTER_PORT,
    DCGM_EXPORTER_UNIT,
    EPILOG_PROGRAM,
    GPU_JOB_DIR,
    GRAFANA_PORT,
    GRAFANA_UNIT,
    LOG_SHIPPER_UNIT,
    METRICS_DIR,
    METRICS_TIMER,
    MONITORING_CONFIG_PATH,
    NODE_EXPORTER_PORT,
    NODE_EXPORTER_UNIT,
    PROLOG_PROGRAM,
    PROMETHEUS_DATA_DIR,
    PROMETHEUS_LIVE_CONFIG,
    PROMETHEUS_LOCAL_DATA_DIR,
    PROMETHEUS_PORT,
    PROMETHEUS_UNIT,
    STATE_VOLUME_MOUNT,
    Command,
    agent_command,
    dump_document,
    unit_path,
)
from slurmstack.plan import ClusterPlan, PoolPlan
from slurmstack.plan.observability import ObservabilityPlan, observability_plan
from slurmstack.render.alerts import rule_groups
from slurmstack.render.grafana import GRAFANA_DIR, generated_yaml, grafana_files
from slurmstack.render.prometheus import (
    PROMETHEUS_CONFIG,
    RULES,
    alertmanager_config,
    prometheus_config,
)
from slurmstack.render.templates import render_template

# The exporters and servers where the image installs them (templates/image/build.sh, pinned in
# image_pins.json "monitoring"): node_exporter, Prometheus and Alertmanager are Ubuntu's packages
# (their own units disabled: these run with slurmstack's configuration), Grafana Grafana Labs'
# package, dcgm-exporter built from its pinned tag.
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
DCGM_EXPORTER = "/usr/local/bin/dcgm-exporter"
PROMETHEUS = "/usr/bin/prometheus"
ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
GRAFANA_HOME = "/usr/share/grafana"
ALERTMANAGER_CONFIG = "/etc/slurmstack/alertmanager.yml"
METRICS_SERVICE = "slurmstack-metrics.service"
# The users the packages create; the servers run as them, never as root (only root reaches the
# instance's credentials). Their state: systemd's StateDirectory under /var/lib, Prometheus's
# samples on the state volume.
MONITOR_USER = "prometheus"
GRAFANA_USER = "grafana"
ALERTMANAGER_STATE = "slurmstack-alertmanager"
GRAFANA_STATE = "slurmstack-grafana"
# node_exporter's collectors that read what the dashboards do not use, or that a GPU node has
# thousands of (the per-CPU ones): off, to keep the head's Prometheus small.
NODE_EXPORTER_OFF = ("arp", "bcache", "bonding", "btrfs", "conntrack", "edac", "entropy",
                     "fibrechannel", "hwmon", "ipvs", "mdadm", "nfs", "nfsd", "powersupplyclass",
                     "rapl", "schedstat", "sockstat", "softnet", "tapestats", "thermal_zone",
                     "timex", "udp_queues", "xfs", "zfs", "infiniband", "cpufreq")  # fmt: skip


def _unit(plan: ClusterPlan, description: str, exec_start: str, **options: Any) -> str:
    values = {
        "type": "simple",
        "user": "",
        "state_directory": "",
        "after": (),
        "requires_mounts_for": "",
        "exec_start_pre": (),
    } | options
    if isinstance(values["exec_start_pre"], str):
        values["exec_start_pre"] = (values["exec_start_pre"],)
    return render_template(
        "systemd/slurmstack-monitor.service.j2",
        plan=plan,
        description=description,
        exec_start=exec_start,
        **values,
    )


def node_exporter_unit(plan: ClusterPlan) -> str:
    flags = [f"--web.listen-address=:{NODE_EXPORTER_PORT}",
             f"--collector.textfile.directory={METRICS_DIR}",
             "--collector.filesystem.mount-points-exclude=^/(dev|proc|run|sys|var/lib/docker)($|/)"]  # fmt: skip
    flags += [f"--no-collector.{name}" for name in NODE_EXPORTER_OFF]
    return _unit(plan, "node_exporter", " ".join([NODE_EXPORTER, *flags]), user=MONITOR_USER)


def metrics_units(plan: ClusterPlan, observe: ObservabilityPlan, head: bool) -> dict[str, str]:
    commands = [agent_command(Command.NODE_METRICS)]
    if head:
        commands.insert(0, agent_command(Command.HEAD_METRICS))
    service = _unit(plan, "the agent's metrics", commands[0], type="oneshot")
    for extra in commands[1:]:
        service = service.replace(
            f"ExecStart={commands[0]}\n", f"ExecStart={commands[0]}\nExecStart={extra}\n"
        )
    timer = render_template(
        "systemd/slurmstack-metrics.timer.j2",
        plan=plan,
        interval_seconds=observe.scrape_interval_seconds,
        where="the head node" if head else "every node",
    )
    return {unit_path(METRICS_SERVICE): service, unit_path(METRICS_TIMER): timer}


def log_shipper_unit(plan: ClusterPlan) -> str:
    """Every node's `follow-logs`: root, as only root reaches the instance's credentials (the
    metadata firewall) and reads slurmctld's and slurmd's logs."""
    return _unit(plan, "log shipper", agent_command(Command.FOLLOW_LOGS))


def head_monitoring_files(plan: ClusterPlan) -> dict[str, str]:
    observe = observability_plan(plan)
    # With a managed workspace Prometheus reads the live configuration its start writes.
    config = PROMETHEUS_LIVE_CONFIG if observe.managed_prometheus else PROMETHEUS_CONFIG
    # On the state volume; with a backup controller on each controller's own disk (the state
    # mount is EFS then: see contract.PROMETHEUS_LOCAL_DATA_DIR).
    data_dir = PROMETHEUS_LOCAL_DATA_DIR if plan.head.backup else PROMETHEUS_DATA_DIR
    prometheus_pre = [f"/usr/bin/install -d -o {MONITOR_USER} -g {MONITOR_USER} {data_dir}"]
    if observe.managed_prometheus:
        prometheus_pre.append(agent_command(Command.PROMETHEUS_CONFIG, PROMETHEUS_CONFIG))
    prometheus = (
        f"{PROMETHEUS} --config.file={config} --storage.tsdb.path={data_dir}"
        f" --storage.tsdb.retention.time={observe.retention_days}d"
        f" --storage.tsdb.retention.size={observe.retention_gib}GB"
        f" --web.listen-address=127.0.0.1:{PROMETHEUS_PORT} --web.enable-lifecycle"
    )
    alertmanager = (
        f"{ALERTMANAGER} --config.file={ALERTMANAGER_CONFIG} --storage.path=/var/lib/{ALERTMANAGER_STATE}"
        f" --web.listen-address=127.0.0.1:{ALERTMANAGER_PORT} --cluster.listen-address="
    )
    grafana = (
        f"{GRAFANA_HOME}/bin/grafana server --homepath={GRAFANA_HOME}"
        f" cfg:paths.provisioning={GRAFANA_DIR}/provisioning cfg:server.http_addr=127.0.0.1"
        f" cfg:server.http_port={GRAFANA_PORT} cfg:paths.data=/var/lib/{GRAFANA_STATE}"
    )
    return {
        MONITORING_CONFIG_PATH: dump_document(observe.monitoring),
        PROMETHEUS_CONFIG: generated_yaml(
            f"Prometheus on the head of {plan.name}", prometheus_config(plan, observe)
        ),
        RULES: generated_yaml(f"the alert rules of {plan.name}", rule_groups(observe)),
        ALERTMANAGER_CONFIG: generated_yaml(
            "Alertmanager, to the alert relay", alertmanager_config()
        ),
        unit_path(NODE_EXPORTER_UNIT): node_exporter_unit(plan),
        unit_path(LOG_SHIPPER_UNIT): log_shipper_unit(plan),
        unit_path(PROMETHEUS_UNIT): _unit(
            plan,
            "Prometheus",
            prometheus,
            user=MONITOR_USER,
            requires_mounts_for="" if plan.head.backup else STATE_VOLUME_MOUNT,
            exec_start_pre=tuple(prometheus_pre),
        ),
        unit_path(ALERTMANAGER_UNIT): _unit(
            plan,
            "Alertmanager",
            alertmanager,
            user=MONITOR_USER,
            state_directory=ALERTMANAGER_STATE,
        ),
        # Root: only root reaches the instance's credentials (the metadata firewall).
        unit_path(ALERT_RELAY_UNIT): _unit(plan, "alert relay", agent_command(Command.ALERT_RELAY)),
        unit_path(GRAFANA_UNIT): _unit(
            plan, "Grafana", grafana, user=GRAFANA_USER, state_directory=GRAFANA_STATE
        ),
        **metrics_units(plan, observe, head=True),
        **grafana_files(plan, observe),
    }


def pool_monitoring_files(plan: ClusterPlan, pool: PoolPlan) -> dict[str, str]:
    observe = observability_plan(plan)
    files = {
        unit_path(NODE_EXPORTER_UNIT): node_exporter_unit(plan),
        unit_path(LOG_SHIPPER_UNIT): log_shipper_unit(plan),
        **metrics_units(plan, observe, head=False),
    }
    if pool.expected_gpus:
        dcgm = (
            f"{DCGM_EXPORTER} --address=:{DCGM_EXPORTER_PORT} --hpc-job-mapping-dir={GPU_JOB_DIR}"
        )
        files[unit_path(DCGM_EXPORTER_UNIT)] = _unit(plan, "dcgm-exporter", dcgm)
    for path, key, command in (
        (PROLOG_PROGRAM, "Prolog", Command.GPU_JOB_START),
        (EPILOG_PROGRAM, "Epilog", Command.GPU_JOB_END),
    ):
        files[path] = render_template(
            "monitoring/job-program.j2", plan=plan, key=key, command=command
        )
    return files


def login_monitoring_files(plan: ClusterPlan) -> dict[str, str]:
    """A login node's: node_exporter (the head's Prometheus scrapes it, docs/observing.md),
    the agent's node metrics (its shared file systems) and the log shipper (its agent's events
    and its authentication log)."""
    observe = observability_plan(plan)
    return {
        unit_path(NODE_EXPORTER_UNIT): node_exporter_unit(plan),
        unit_path(LOG_SHIPPER_UNIT): log_shipper_unit(plan),
        **metrics_units(plan, observe, head=False),
    }
