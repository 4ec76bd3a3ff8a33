"""The head's monitoring files as every example renders them: Prometheus and Alertmanager load
them (promtool check config, amtool check-config: Debian's prometheus and
prometheus-alertmanager), the dashboards are well-formed Grafana documents whose every query is
PromQL that Prometheus parses (promtool's own parser, through a rule file), and a GPU pool's
nodes run dcgm-exporter with the GPU-to-job files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from slurmstack.contract import DCGM_EXPORTER_UNIT, GPU_JOB_DIR
from slurmstack.plan.observability import observability_plan
from slurmstack.render.dashboards import dashboards
from slurmstack.render.monitoring import (
    ALERTMANAGER_CONFIG,
    PROMETHEUS_CONFIG,
    RULES,
    head_monitoring_files,
    pool_monitoring_files,
)
from support.examples import EXAMPLES, example_plan

pytestmark = pytest.mark.observability
STEMS = [p.stem for p in EXAMPLES]


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        message = f"{name} is missing (apt-get install prometheus prometheus-alertmanager)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {message}")
        pytest.skip(message)
    return found


def written(files: dict[str, str], root: Path) -> None:
    for path, text in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


@pytest.mark.parametrize("stem", STEMS)
def test_prometheus_and_alertmanager_load_the_rendered_configuration(
    stem: str, tmp_path: Path
) -> None:
    files = head_monitoring_files(example_plan(stem))
    written(files, tmp_path)
    config = tmp_path / PROMETHEUS_CONFIG.lstrip("/")
    config.write_text(config.read_text().replace(RULES, str(tmp_path / RULES.lstrip("/"))))
    check = subprocess.run(
        [tool("promtool"), "check", "config", str(config)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    manager = tmp_path / ALERTMANAGER_CONFIG.lstrip("/")
    check = subprocess.run(
        [tool("amtool"), "check-config", str(manager)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("stem", STEMS)
def test_every_dashboard_query_is_promql_prometheus_parses(stem: str, tmp_path: Path) -> None:
    plan = example_plan(stem)
    observe = observability_plan(plan)
    rules = []
    for dashboard in dashboards(observe):
        document = dashboard.document(plan.name)
        assert document["uid"].startswith("slurmstack-") and document["panels"]
        ids = [p["id"] for p in document["panels"]]
        assert len(ids) == len(set(ids))
        for panel in document["panels"]:
            assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
            for target in panel["targets"]:
                rules.append(
                    {
                        "record": f"panel:{dashboard.uid.replace('-', '_')}:q{len(rules)}",
                        "expr": target["expr"],
                    }
                )
    (tmp_path / "queries.yml").write_text(
        yaml.safe_dump({"groups": [{"name": "q", "rules": rules}]})
    )
    check = subprocess.run(
        [tool("promtool"), "check", "rules", str(tmp_path / "queries.yml")],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert len(rules) >= 25


def test_the_cost_and_health_dashboards_follow_the_definition() -> None:
    """Fair share only with accounting; Capacity Block hours only with a Capacity Block pool."""

    def titles(stem: str) -> set[str]:
        observe = observability_plan(example_plan(stem))
        return {p.title for d in dashboards(observe) for p in d.panels}

    p5 = titles("p5-training")  # accounting on, a Capacity Block pool
    cpu = titles("cpu-hpc")
    assert {"Fair share", "Capacity Blocks: hours left"} <= p5
    assert "Capacity Blocks: hours left" not in cpu


def test_gpu_pools_run_dcgm_exporter_with_the_job_files() -> None:
    plan = example_plan("p5-training")
    gpu = pool_monitoring_files(plan, plan.pool("train"))
    unit = gpu[f"/etc/systemd/system/{DCGM_EXPORTER_UNIT}"]
    assert f"--hpc-job-mapping-dir={GPU_JOB_DIR}" in unit and "--address=:9400" in unit
    cpu_plan = example_plan("cpu-hpc")
    assert not any(
        DCGM_EXPORTER_UNIT in p for p in pool_monitoring_files(cpu_plan, cpu_plan.pools[0])
    )
    dashboards_json = head_monitoring_files(plan)
    cost = json.loads(dashboards_json["/etc/slurmstack/grafana/dashboards/cost.json"])
    assert cost["title"] == "llm-train: cost"
