"""The head's monitoring files run by the real programs, on loopback: node_exporter started with
the rendered unit's own flags serves the agent's textfile metrics; Prometheus started with the
rendered unit's flags and the rendered configuration (paths moved under the test's directory,
intervals shortened) loads the rendered rules, scrapes the targets the agent's file_sd writer
lists with their node and pool labels, and follows the file when a node powers down and when an
elastic node registers, without a restart. Both daemons are stopped by pid; every wait is
bounded. In CI a missing program fails the test."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from slurmstack.contract import (
    NODE_EXPORTER_UNIT,
    PROMETHEUS_DATA_DIR,
    PROMETHEUS_UNIT,
    SCRAPE_TARGETS_DIR,
    Metric,
    unit_path,
)
from slurmstack.node.metrics_file import exposition
from slurmstack.node.observe.targets import target_groups
from slurmstack.node.slurm import NodeRecord
from slurmstack.plan.observability import observability_plan
from slurmstack.render.alerts import rule_groups
from slurmstack.render.monitoring import (
    NODE_EXPORTER,
    PROMETHEUS,
    PROMETHEUS_CONFIG,
    RULES,
    head_monitoring_files,
)
from slurmstack.render.node import node_config
from support.examples import example_plan

pytestmark = pytest.mark.observability

T = TypeVar("T")
PLAN = example_plan("p5-training")
WAIT_SECONDS = 60.0


def program(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        message = f"{name} is missing (apt-get install prometheus prometheus-node-exporter)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {message}")
        pytest.skip(message)
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def exec_start(unit: str) -> list[str]:
    (line,) = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    return shlex.split(line.removeprefix("ExecStart="))


def with_flags(argv: list[str], flags: dict[str, str]) -> list[str]:
    """The rendered command with these flags' values replaced (each must be there)."""
    out = list(argv)
    for name, value in flags.items():
        (index,) = [i for i, a in enumerate(out) if a.startswith(name + "=")]
        out[index] = f"{name}={value}"
    return out


@contextmanager
def daemon(argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)


def wait_for(what: str, probe: Callable[[], T | None], logs: list[Path]) -> T:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            value = probe()
        except OSError:
            value = None
        if value is not None:
            return value
        time.sleep(0.5)
    tails = "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in logs if p.exists())
    pytest.fail(f"{what}: not within {WAIT_SECONDS:.0f} s\n{tails}")


def api(port: int, path: str, **params: str) -> Any:
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    url = f"http://127.0.0.1:{port}/api/v1/{path}{query}"
    with urllib.request.urlopen(url, timeout=5) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


def own_metric(port: int, name: str) -> str:
    """A value of Prometheus's own /metrics (it does not scrape itself here)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    (value,) = [line.split()[1] for line in text.splitlines() if line.startswith(name + " ")]
    return value


def record(name: str, state: str = "IDLE", address: str = "127.0.0.1") -> NodeRecord:
    return NodeRecord.of({"NodeName": name, "NodeAddr": address, "State": state})


def node_targets(port: int) -> dict[str, dict[str, str]]:
    active = api(port, "targets", state="active")["activeTargets"]
    nodes = {
        t["labels"]["node"]: t["labels"]
        for t in active
        if t["labels"]["job"] == "nodes" and t["health"] == "up"
    }
    return nodes


def test_prometheus_scrapes_the_agents_targets_and_follows_them_without_a_restart(
    tmp_path: Path,
) -> None:
    files = head_monitoring_files(PLAN)
    exporter_port, prometheus_port = free_port(), free_port()

    # The agent's textfile metrics, as its writer writes them.
    textfiles = tmp_path / "metrics"
    textfiles.mkdir()
    (textfiles / "health.prom").write_text(
        exposition([(Metric.HEALTH_CHECK_OK, {"check": "gpu-count"}, 1.0)])
    )
    # The units run the programs where Debian's and Ubuntu's packages put them (the image
    # installs those packages: image_pins.json, packages.monitoring).
    exporter = exec_start(files[unit_path(NODE_EXPORTER_UNIT)])
    assert exporter[0] == NODE_EXPORTER == program("prometheus-node-exporter")
    exporter = with_flags(
        exporter,
        {
            "--web.listen-address": f"127.0.0.1:{exporter_port}",
            "--collector.textfile.directory": str(textfiles),
        },
    )

    # The rendered configuration, its paths under tmp_path, its intervals 1 s.
    config = yaml.safe_load(files[PROMETHEUS_CONFIG])
    rules = tmp_path / "rules.yml"
    rules.write_text(files[RULES])
    assert config["rule_files"] == [RULES]
    config["rule_files"] = [str(rules)]
    config["global"].update(scrape_interval="1s", evaluation_interval="1s")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    jobs["head"]["static_configs"][0]["targets"] = [f"127.0.0.1:{exporter_port}"]
    targets = tmp_path / "targets"
    targets.mkdir()
    for job in ("nodes", "gpus"):
        (sd,) = jobs[job]["file_sd_configs"]
        assert sd["files"] == [f"{SCRAPE_TARGETS_DIR}/{job}.json"]
        sd.update(files=[str(targets / f"{job}.json")], refresh_interval="1s")
        (targets / f"{job}.json").write_text("[]\n")
    config_file = tmp_path / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config))
    prometheus = exec_start(files[unit_path(PROMETHEUS_UNIT)])
    assert prometheus[0] == PROMETHEUS == program("prometheus")
    assert f"--storage.tsdb.path={PROMETHEUS_DATA_DIR}" in prometheus
    prometheus = with_flags(
        prometheus,
        {
            "--config.file": str(config_file),
            "--storage.tsdb.path": str(tmp_path / "data"),
            "--web.listen-address": f"127.0.0.1:{prometheus_port}",
        },
    )

    head = node_config(PLAN, None)
    monitoring = observability_plan(PLAN).monitoring

    def write_targets(nodes: list[NodeRecord]) -> None:
        """What `head-metrics` writes, the exporter's port being this test's."""
        groups = target_groups(head, monitoring, nodes, exporter_port)
        (targets / "nodes.json").write_text(json.dumps(groups))

    logs = [tmp_path / "node_exporter.log", tmp_path / "prometheus.log"]
    with daemon(exporter, logs[0]), daemon(prometheus, logs[1]) as server:
        wait_for("Prometheus ready", lambda: api(prometheus_port, "status/runtimeinfo"), logs)
        # Every rendered rule loaded and evaluated.
        loaded = api(prometheus_port, "rules")["groups"]
        wanted = {
            g["name"]: len(g["rules"]) for g in rule_groups(observability_plan(PLAN))["groups"]
        }
        assert {g["name"]: len(g["rules"]) for g in loaded} == wanted

        def rules_evaluated() -> bool | None:
            groups = api(prometheus_port, "rules")["groups"]
            return all(r.get("health") == "ok" for g in groups for r in g["rules"]) or None

        wait_for("every rule evaluated", rules_evaluated, logs)

        def scraped(*names: str) -> dict[str, dict[str, str]] | None:
            nodes = node_targets(prometheus_port)
            return nodes if nodes is not None and set(nodes) == set(names) else None

        # Two nodes with an instance, one powered-down elastic node (no target).
        write_targets(
            [
                record("train-10-42-0-5"),
                record("dev-10-42-0-7"),
                record("dev-e1", "IDLE+CLOUD+POWERED_DOWN", "dev-e1"),
            ]
        )
        seen = wait_for(
            "both nodes scraped", lambda: scraped("train-10-42-0-5", "dev-10-42-0-7"), logs
        )
        assert {n: t["pool"] for n, t in seen.items()} == {
            "train-10-42-0-5": "train",
            "dev-10-42-0-7": "dev",
        }
        # The agent's textfile metric, with the target's node and pool.
        query = f'{Metric.HEALTH_CHECK_OK}{{job="nodes",node="train-10-42-0-5"}}'
        sample = wait_for(
            "the textfile metric",
            lambda: api(prometheus_port, "query", query=query)["result"] or None,
            logs,
        )
        assert sample[0]["metric"]["pool"] == "train" and sample[0]["value"][1] == "1"
        reloaded = "prometheus_config_last_reload_success_timestamp_seconds"
        before = own_metric(prometheus_port, reloaded)
        # The dev node powers down; the elastic node registers: the targets follow, same process.
        write_targets(
            [
                record("train-10-42-0-5"),
                record("dev-10-42-0-7", "IDLE+POWERED_DOWN", "dev-10-42-0-7"),
                record("dev-e1"),
            ]
        )
        after = wait_for(
            "the targets follow the nodes", lambda: scraped("train-10-42-0-5", "dev-e1"), logs
        )
        assert after["dev-e1"]["pool"] == "dev"
        # The same process, its configuration never reloaded: file_sd alone followed the nodes.
        assert server.poll() is None
        assert own_metric(prometheus_port, reloaded) == before
