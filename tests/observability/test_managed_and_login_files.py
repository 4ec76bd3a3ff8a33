"""The head's monitoring files for the parts of issue 28 item 2 this branch adds: Grafana
provisioned with the head's Prometheus and the dashboards, Prometheus remote-writing to the
managed workspace (checked by promtool, stand-in and live), and login nodes scraped and
running their exporter, metrics and log shipper."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from observability.test_monitoring_files import tool, written
from slurmstack.contract import (
    GRAFANA_PORT,
    LOG_SHIPPER_UNIT,
    LOGIN_TARGETS_FILE,
    METRICS_TIMER,
    MONITORING_CONFIG_PATH,
    NODE_EXPORTER_UNIT,
    PROMETHEUS_LIVE_CONFIG,
    PROMETHEUS_PORT,
    PROMETHEUS_UNIT,
    REMOTE_WRITE_URL_PLACEHOLDER,
    Command,
    agent_command,
    unit_path,
)
from slurmstack.plan.observability import observability_plan
from slurmstack.render import role_files
from slurmstack.render.dashboards import dashboards
from slurmstack.render.grafana import GRAFANA_DIR
from slurmstack.render.monitoring import (
    GRAFANA_HOME,
    PROMETHEUS_CONFIG,
    RULES,
    head_monitoring_files,
)
from support.stack import plan_of, small_cluster, with_changes

pytestmark = pytest.mark.observability
DATASOURCES = f"{GRAFANA_DIR}/provisioning/datasources/slurmstack.yaml"
PROVIDERS = f"{GRAFANA_DIR}/provisioning/dashboards/slurmstack.yaml"


def plan(**observability: Any) -> Any:
    definition = with_changes(small_cluster(), observability=observability)
    return plan_of(definition)


def exec_lines(unit: str, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith(f"{key}=")]


def test_grafana_is_provisioned_with_the_heads_prometheus_and_every_dashboard() -> None:
    cluster = plan()
    files = head_monitoring_files(cluster)
    (source,) = yaml.safe_load(files[DATASOURCES])["datasources"]
    assert source["type"] == "prometheus" and source["isDefault"] is True
    assert source["url"] == f"http://127.0.0.1:{PROMETHEUS_PORT}"
    # That Prometheus listens there, the one Grafana's unit finds its provisioning beside.
    (prometheus,) = exec_lines(files[unit_path(PROMETHEUS_UNIT)], "ExecStart")
    assert f"--web.listen-address=127.0.0.1:{PROMETHEUS_PORT}" in prometheus
    (grafana,) = exec_lines(files[unit_path("slurmstack-grafana.service")], "ExecStart")
    assert grafana.startswith(f"{GRAFANA_HOME}/bin/grafana server ")
    assert f"cfg:paths.provisioning={GRAFANA_DIR}/provisioning" in grafana
    assert f"cfg:server.http_addr=127.0.0.1 cfg:server.http_port={GRAFANA_PORT}" in grafana
    (provider,) = yaml.safe_load(files[PROVIDERS])["providers"]
    folder = provider["options"]["path"]
    shipped = {p.rsplit("/", 1)[1] for p in files if p.startswith(folder + "/")}
    assert shipped == {f"{d.uid}.json" for d in dashboards(observability_plan(cluster))}
    for name in shipped:
        panels = json.loads(files[f"{folder}/{name}"])["panels"]
        uids = {t["datasource"]["uid"] for p in panels for t in p.get("targets", [])}
        assert uids == {source["uid"]}, name


def _checked(config: str, tmp_path: Path) -> None:
    path = tmp_path / "prometheus.yml"
    path.write_text(config.replace(RULES, str(tmp_path / RULES.lstrip("/"))))
    check = subprocess.run(
        [tool("promtool"), "check", "config", str(path)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_prometheus_remote_writes_to_the_workspace_only_when_asked(tmp_path: Path) -> None:
    files = head_monitoring_files(plan(managed_prometheus=True))
    written(files, tmp_path)
    rendered = files[PROMETHEUS_CONFIG]
    (remote,) = yaml.safe_load(rendered)["remote_write"]
    assert remote["url"] == REMOTE_WRITE_URL_PLACEHOLDER
    assert remote["sigv4"] == {"region": "us-east-1"}  # signed with the head's role
    _checked(rendered, tmp_path)
    url = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write"
    _checked(rendered.replace(REMOTE_WRITE_URL_PLACEHOLDER, url), tmp_path)
    unit = files[unit_path(PROMETHEUS_UNIT)]
    (start,) = exec_lines(unit, "ExecStart")
    assert f"--config.file={PROMETHEUS_LIVE_CONFIG} " in start
    pre = exec_lines(unit, "ExecStartPre")
    assert pre[-1] == "+" + agent_command(Command.PROMETHEUS_CONFIG, PROMETHEUS_CONFIG)
    # Off (the default): no remote write, the rendered file itself, no agent step.
    off = head_monitoring_files(plan())
    assert "remote_write" not in yaml.safe_load(off[PROMETHEUS_CONFIG])
    (start,) = exec_lines(off[unit_path(PROMETHEUS_UNIT)], "ExecStart")
    assert f"--config.file={PROMETHEUS_CONFIG} " in start
    assert len(exec_lines(off[unit_path(PROMETHEUS_UNIT)], "ExecStartPre")) == 1


def test_login_nodes_are_scraped_and_run_the_exporter_metrics_and_log_shipper(
    tmp_path: Path,
) -> None:
    definition = small_cluster()
    definition["login_pools"] = [{"name": "login", "instance_type": "m7i.2xlarge", "count": 2}]
    cluster = plan_of(definition)
    files = head_monitoring_files(cluster)
    written(files, tmp_path)
    jobs = {j["job_name"]: j for j in yaml.safe_load(files[PROMETHEUS_CONFIG])["scrape_configs"]}
    assert jobs["login"]["file_sd_configs"][0]["files"] == [LOGIN_TARGETS_FILE]
    _checked(files[PROMETHEUS_CONFIG], tmp_path)
    assert json.loads(files[MONITORING_CONFIG_PATH])["login_pools"] == ["login"]
    login = role_files(cluster, "login/login")
    for unit in (NODE_EXPORTER_UNIT, LOG_SHIPPER_UNIT, METRICS_TIMER):
        assert unit_path(unit) in login, unit
    # node-metrics only: head-metrics is the head's.
    service = login[unit_path("slurmstack-metrics.service")]
    assert exec_lines(service, "ExecStart") == [agent_command(Command.NODE_METRICS)]
    assert not any(re.search(r"prometheus|alertmanager|grafana", p) for p in login
                   if p.startswith("/etc/systemd"))  # fmt: skip
    # Without login pools, no login job.
    plain = head_monitoring_files(plan())
    assert "login" not in {
        j["job_name"] for j in yaml.safe_load(plain[PROMETHEUS_CONFIG])["scrape_configs"]
    }
