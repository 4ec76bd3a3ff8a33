"""Observing a cluster on the virtual cluster (definitions/observe.yaml, a cluster of its own: a
head, a GPU pool on EFA with one node, an elastic CPU pool with none always on), marker
`observability`. The scenarios share it and leave it as they found it (no job, no fault, every
node in service).

What is real: the head's Prometheus and Alertmanager (Debian's packages) started by the head's
own sync-config from the rendered units, with the rendered configuration, rules and targets
(nothing moved: the head's paths are its own), node_exporter on every node, the agent's
metrics, file_sd targets, Prolog and Epilog, the alert relay and the AWS it delivers to (moto:
an EventBridge rule and a topic subscription, each to an SQS queue the test reads). Stand-ins:
"dcgm-exporter", "metrics-timer", "gpu-tools", "efa" and the elastic ones (harness/standins.py).

- Prometheus scrapes every node's exporters; the GPUs' series carry the Slurm job that holds
  them while it runs, and lose it when it ends.
- A GPU falling off the bus fires GpuMissing, which reaches EventBridge (the documented schema)
  and the alert topic, firing and then resolved.
- An elastic node is a target while it runs and is dropped when it powers down, with the same
  Prometheus process and no reload.
- Every panel of every dashboard returns series; the dashboards' pictures are drawn from them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from slurmstack.contract import (
    ALERT_EVENT_SCHEMA_VERSION,
    PROMETHEUS_UNIT,
)
from slurmstack.plan.observability import observability_plan
from slurmstack.render.dashboards import dashboards
from slurmstack.render.grafana_model import Dashboard
from vcluster.conftest import require_host
from vcluster.harness import VirtualCluster, wait_until
from vcluster.harness.elastic import ElasticNodes, prepare_head
from vcluster.harness.faults import gpu_faults, lose_gpu
from vcluster.harness.node import Node
from vcluster.harness.observe import AlertInbox, MetricsTimer, Prometheus, efa_traffic

pytestmark = [pytest.mark.vcluster, pytest.mark.observability]

DEFINITION = Path(__file__).resolve().parent / "definitions" / "observe.yaml"
PROGRAMS = ("prometheus", "prometheus-alertmanager", "prometheus-node-exporter")
# Scrapes and rule evaluations every 5 s (the definition), Alertmanager's group_wait of 10 s:
# a change shows within seconds; these bounds leave room for a loaded machine.
SCRAPE_SECONDS = 90
ALERT_SECONDS = 180
# Alertmanager sends a group's resolution at its next group_interval (1 min).
RESOLVED_SECONDS = 240
ELASTIC_SECONDS = 300
PICTURES_ENV = "SLURMSTACK_DASHBOARD_PICTURES"


@dataclass
class Observed:
    cluster: VirtualCluster
    elastic: ElasticNodes
    prometheus: Prometheus
    inbox: AlertInbox
    timer: MetricsTimer
    began: float  # when Prometheus was up (seconds since the epoch)

    @property
    def head(self) -> Node:
        assert self.cluster.head is not None
        return self.cluster.head

    def gpu_node(self) -> tuple[Node, str]:
        (node,) = self.cluster.pool_nodes("gpu")
        return node, self.cluster.slurm_name(node)

    def diagnostics(self) -> str:
        logs = self.head.run(
            "sh", "-c", "tail -n 30 /var/log/vcluster/slurmstack-*.log", check=False
        ).stdout
        return f"metrics timer: {self.timer.passes} passes, {self.timer.failures[-5:]}\n{logs}"


def require_programs() -> None:
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        message = f"{', '.join(missing)} missing (apt-get install {' '.join(PROGRAMS)})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {message}")
        pytest.skip(message)


@pytest.fixture(scope="module")
def observed() -> Iterator[Observed]:
    require_host()
    require_programs()
    with VirtualCluster(DEFINITION, keep=os.environ.get("VCLUSTER_KEEP") == "1") as cluster:
        prepare_head(cluster)
        elastic = ElasticNodes(cluster)
        prometheus = Prometheus(cluster)
        inbox = AlertInbox(cluster)
        interval = observability_plan(cluster.plan).scrape_interval_seconds

        def live() -> list[Node]:
            assert cluster.head is not None
            return [cluster.head, *list(cluster.workers.values()), *list(elastic.nodes.values())]

        with MetricsTimer(live, interval) as timer:
            wait_until(prometheus.ready, "the head's Prometheus to answer", timeout=SCRAPE_SECONDS)
            yield Observed(cluster, elastic, prometheus, inbox, timer, time.time())
        print(f"\nobservability virtual cluster timings (s): {cluster.timings}")
    assert cluster.leftovers() == [], "the observability cluster's cleanup left these behind"


def waited(observed: Observed, predicate: Any, what: str, timeout: float) -> Any:
    try:
        return wait_until(predicate, what, timeout, poll=2)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{observed.diagnostics()}") from None


def sbatch(observed: Observed, *args: str) -> str:
    out = observed.head.run("sbatch", "--parsable", "--chdir=/tmp", *args)
    return out.stdout.strip()


def job_state(observed: Observed, job: str) -> str:
    out = observed.head.run("scontrol", "-o", "show", "job", job, check=False).stdout
    return next((f.split("=", 1)[1] for f in out.split() if f.startswith("JobState=")), "")


def cancel(observed: Observed, job: str) -> None:
    observed.head.run("scancel", job, check=False)
    waited(
        observed,
        lambda: job_state(observed, job) not in ("RUNNING", "PENDING", "COMPLETING", "CONFIGURING"),
        f"job {job} to end",
        timeout=60,
    )


def by_gpu(series: list[dict[str, Any]]) -> dict[str, str]:
    """GPU index -> the job its series is labelled with ("" for none)."""
    return {s["metric"]["gpu"]: s["metric"].get("hpc_job", "") for s in series}


def test_prometheus_scrapes_every_nodes_exporters_and_labels_gpus_with_their_job(
    observed: Observed,
) -> None:
    prometheus = observed.prometheus
    node, name = observed.gpu_node()
    # The head's own sync-config started Prometheus once the state volume was mounted.
    assert observed.head.run("systemctl", "is-active", PROMETHEUS_UNIT, check=False).returncode == 0

    def every_target_up() -> dict[str, dict[str, Any]] | None:
        targets = {job: prometheus.targets(job) for job in ("head", "nodes", "gpus")}
        names = {job: set(found) for job, found in targets.items()}
        if names != {"head": {"head"}, "nodes": {name}, "gpus": {name}}:
            return None
        healthy = all(t["health"] == "up" for found in targets.values() for t in found.values())
        return targets if healthy else None

    targets = waited(observed, every_target_up, "every exporter scraped", SCRAPE_SECONDS)
    assert targets["nodes"][name]["labels"]["pool"] == "gpu"
    assert targets["gpus"][name]["scrapeUrl"] == f"http://{node.address}:9400/metrics"
    # node_exporter's own series and the agent's textfile metrics, from each node.
    for node_label in ("head", name):
        assert prometheus.query(f'node_filesystem_size_bytes{{node="{node_label}"}}')
    mounted = prometheus.query(f'slurmstack_filesystem_mounted{{node="{name}",mount="/home"}}')
    assert [s["value"][1] for s in mounted] == ["1"]
    ports = prometheus.query(f'slurmstack_efa_port_active{{node="{name}"}}')
    assert len(ports) == observed.cluster.plan.pool("gpu").expected_efa_devices >= 1
    assert prometheus.query(f'slurmstack_node_state{{node="{name}",state="idle"}}')
    # Every GPU, none held.
    util = f'DCGM_FI_DEV_GPU_UTIL{{node="{name}"}}'
    assert by_gpu(prometheus.query(util)) == {"0": "", "1": "", "2": "", "3": ""}

    job = sbatch(observed, "--gres=gpu:2", "--wrap", "sleep 300")
    try:
        held = waited(
            observed,
            lambda: (
                sorted(by_gpu(prometheus.query(util)).values()) == ["", "", job, job]
                and by_gpu(prometheus.query(util))
            ),
            f"job {job}'s label on two GPUs",
            SCRAPE_SECONDS,
        )
        # The GPUs Slurm gave the job are the ones labelled with it.
        detail = observed.head.run("scontrol", "-d", "show", "job", job).stdout
        given = detail.split("IDX:")[1].split(")")[0]  # e.g. "0-1"
        first, _, last = given.partition("-")
        indices = {str(i) for i in range(int(first), int(last or first) + 1)}
        assert {g for g, j in held.items() if j == job} == indices
        # Slurm's side, from the head's metrics: the node's GPUs, the job's, its partition.
        # (Slurm's own slurm_node_gpus counts TRES, without gres/gpu on a cluster without
        # accounting, such as this one: 0 from 25.11's endpoint, 4 from the agent's before.)
        wanted = {
            f'slurmstack_node_gpus{{node="{name}",pool="gpu"}}': "4",
            f'slurm_node_gpus_alloc{{node="{name}"}}': "2",
            f'slurmstack_job_gpus{{hpc_job="{job}"}}': "2",
            f'slurmstack_job_info{{hpc_job="{job}",partition="gpu"}}': "1",
            'slurm_partition_jobs_running{partition="gpu"}': "1",
        }

        def slurm_side() -> dict[str, list[str]]:
            return {q: [s["value"][1] for s in prometheus.query(q)] for q in wanted}

        expected = {q: [v] for q, v in wanted.items()}
        with contextlib.suppress(TimeoutError):  # the assertion below shows what differs
            wait_until(lambda: slurm_side() == expected, "Slurm's view", SCRAPE_SECONDS, poll=2)
        assert slurm_side() == expected
    finally:
        cancel(observed, job)
    waited(
        observed,
        lambda: set(by_gpu(prometheus.query(util)).values()) == {""},
        f"job {job}'s label gone from the GPUs once it ended",
        SCRAPE_SECONDS,
    )


def test_a_gpu_falling_off_fires_its_alert_to_eventbridge_and_the_topic(
    observed: Observed,
) -> None:
    node, name = observed.gpu_node()
    inbox = observed.inbox
    began = time.monotonic()
    lose_gpu(node, 3)  # XID 79 in the kernel log; nvidia-smi and DCGM no longer read GPU 3
    try:
        (event,) = waited(
            observed,
            lambda: [
                e for e in inbox.alert_events("GpuMissing", "firing") if e["detail"]["node"] == name
            ][:1],
            "GpuMissing's event on EventBridge",
            ALERT_SECONDS,
        )
        fired = time.monotonic() - began
        detail = event["detail"]
        assert event["source"] == "slurmstack" and event["detail-type"] == "slurmstack alert"
        assert detail["schema_version"] == ALERT_EVENT_SCHEMA_VERSION
        assert detail["cluster"] == "vo" and detail["pool"] == "gpu"
        assert detail["severity"] == "critical"
        assert detail["summary"] == f"{name} reports 3 GPUs, fewer than Slurm declares"
        assert detail["labels"]["alertname"] == "GpuMissing" and detail["ends_at"] == ""
        (message,) = waited(
            observed,
            lambda: inbox.topic_messages("GpuMissing", "firing")[:1],
            "GpuMissing's message on the alert topic",
            ALERT_SECONDS,
        )
        assert message["Subject"].startswith("[slurmstack vo] FIRING: GpuMissing")
        # The health check drained the node too, and that alert went the same way.
        waited(
            observed,
            lambda: [
                e
                for e in inbox.alert_events("NodeDrainedByHealthCheck", "firing")
                if e["detail"]["node"] == name and e["detail"]["check"] == "gpu-xid"
            ],
            "NodeDrainedByHealthCheck's event",
            ALERT_SECONDS,
        )
    finally:
        gpu_faults(node, None)
        observed.head.run("scontrol", "update", f"nodename={name}", "state=resume", check=False)
    resolved = waited(
        observed,
        lambda: [
            e for e in inbox.alert_events("GpuMissing", "resolved") if e["detail"]["node"] == name
        ],
        "GpuMissing resolved",
        RESOLVED_SECONDS,
    )
    assert resolved[0]["detail"]["ends_at"] != ""
    print(f"\nobservability: GpuMissing on EventBridge {fired:.0f} s after the GPU fell off")
    waited(
        observed,
        lambda: "DRAIN" not in observed.cluster.node_records().get(name, {}).get("State", "DRAIN"),
        f"{name} back in service",
        SCRAPE_SECONDS,
    )


def test_an_elastic_node_is_a_target_while_it_runs_without_a_restart(
    observed: Observed,
) -> None:
    prometheus, elastic = observed.prometheus, observed.elastic
    pid_file = f"/run/vcluster-units/{PROMETHEUS_UNIT}.pid"
    pid = observed.head.run("cat", pid_file).stdout.strip()
    reloaded = "prometheus_config_last_reload_success_timestamp_seconds"
    before = prometheus.own_metric(reloaded)
    assert not [n for n in prometheus.targets("nodes") if n.startswith("burst")]

    job = sbatch(observed, "--partition=burst", "--wrap", "sleep 20")

    def scraped() -> str | None:
        elastic.sync()  # boots the instance the resume program launched
        up = [
            n
            for n, t in prometheus.targets("nodes").items()
            if t["labels"]["pool"] == "burst" and t["health"] == "up"
        ]
        return up[0] if up else None

    name = waited(observed, scraped, "the elastic node scraped", ELASTIC_SECONDS)
    assert prometheus.query(f'node_filesystem_size_bytes{{node="{name}",pool="burst"}}')
    assert name not in prometheus.targets("gpus")  # no GPUs: not a dcgm-exporter target

    def dropped() -> bool:
        elastic.sync()  # kills the node of the instance the suspend program terminated
        return name not in prometheus.targets("nodes")

    waited(observed, dropped, f"{name} dropped once it powered down", ELASTIC_SECONDS)
    assert job_state(observed, job) == "COMPLETED"
    assert not elastic.nodes  # its instance is gone
    # The same process, its configuration never reloaded: file_sd alone followed the node.
    assert observed.head.run("cat", pid_file).stdout.strip() == pid
    assert prometheus.own_metric(reloaded) == before


def panel_results(observed: Observed, dashboard: Dashboard, end: float) -> dict[str, int]:
    """Series each panel's queries return, as Grafana runs them: a table's instant, at the
    range's end; the others over the scenarios' time range."""
    prometheus, out = observed.prometheus, {}
    for panel in dashboard.panels:
        found = 0
        for expr, _legend in panel.queries:
            if panel.kind == "table":
                found += len(prometheus.query(expr, end))
            else:
                found += len(prometheus.query_range(expr, observed.began, end, 5))
        out[panel.title] = found
    return out


def test_every_dashboard_panel_returns_series(observed: Observed, tmp_path: Path) -> None:
    """A job holds two GPUs, one busy and one idle, and moves bytes over EFA; a third GPU
    reports ECC errors, so the health check drains the node while the job runs on. Every
    panel of every dashboard then answers; a panel that returns nothing fails the test by
    dashboard and panel. The dashboards' pictures are drawn from the same answers.

    No panel is excepted. The EFA panels read the stand-in ports' counters (stand-in "efa"),
    which the scenario advances; the capacity-block and fair-share panels are rendered only
    for a cluster with a Capacity Block pool or accounting, which this one has not (the
    rendered dashboards are this cluster's own)."""
    import dashboard_pictures  # tools/

    node, name = observed.gpu_node()
    head = observed.head
    job = sbatch(observed, "--gres=gpu:2", "--wrap", "sleep 600")
    waited(observed, lambda: job_state(observed, job) == "RUNNING", f"job {job} running", 60)
    labelled = f'DCGM_FI_DEV_GPU_UTIL{{hpc_job="{job}"}}'
    held = waited(
        observed,
        lambda: sorted(s["metric"]["gpu"] for s in observed.prometheus.query(labelled)),
        f"job {job}'s GPUs labelled",
        SCRAPE_SECONDS,
    )
    busy, idle = held
    free = next(g for g in ("0", "1", "2", "3") if g not in held)
    gpu_faults(
        node,
        {
            "util": {busy: 92, idle: 1},
            "memory_used_mib": {busy: 31000, idle: 2000},
            "ecc": {free: 2},
        },
    )
    dashboards_of = dashboards(observability_plan(observed.cluster.plan))
    try:
        # Traffic over the job's minutes, and time for the idle GPU-hours' one-minute steps
        # and every rate's second sample.
        deadline = time.monotonic() + 75
        while time.monotonic() < deadline:
            efa_traffic(node, 300)
            time.sleep(5)
        waited(
            observed,
            lambda: observed.prometheus.query(f'slurmstack_node_drained{{node="{name}"}}'),
            f"{name} drained by the ECC check, in the head's metrics",
            SCRAPE_SECONDS,
        )
        end = time.time()
        answered = {d.title: panel_results(observed, d, end) for d in dashboards_of}
        empty = [
            f"{dashboard}: {panel}"
            for dashboard, panels in answered.items()
            for panel, found in panels.items()
            if not found
        ]
        assert empty == [], f"panels whose queries return nothing: {empty}"
        # The pictures, from the same Prometheus over the scenarios' time range.
        into = Path(os.environ.get(PICTURES_ENV) or tmp_path)
        for dashboard in dashboards_of:
            out = into / dashboard_pictures.picture_name(dashboard)
            drawn = dashboard_pictures.draw(
                dashboard,
                observed.cluster.plan.name,
                lambda e, s, t, step: observed.prometheus.query_range(e, s, t, step),
                observed.prometheus.query,
                observed.began,
                end,
                out,
            )
            assert all(drawn.values()), (dashboard.title, drawn)
            assert 5_000 < out.stat().st_size < 120_000, (out, out.stat().st_size)
    finally:
        cancel(observed, job)
        gpu_faults(node, None)
        head.run("scontrol", "update", f"nodename={name}", "state=resume", check=False)
    waited(
        observed,
        lambda: "DRAIN" not in observed.cluster.node_records().get(name, {}).get("State", "DRAIN"),
        f"{name} back in service",
        SCRAPE_SECONDS,
    )
