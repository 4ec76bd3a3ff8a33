"""sync-config: the role's files from the config store, checked by their hash."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from slurmstack.contract import (
    ALERT_RELAY_UNIT,
    ALERTMANAGER_UNIT,
    DCGM_EXPORTER_UNIT,
    GRAFANA_UNIT,
    METRICS_TIMER,
    MONITORING_UNITS,
    NODE_EXPORTER_UNIT,
    PROMETHEUS_UNIT,
    STATE_VOLUME_MOUNT,
    TOPOLOGY_CONF_PATH,
    TOPOLOGY_YAML_PATH,
    DeployParameter,
    Manifest,
    manifest_json,
    read_bundle,
    read_manifest,
    unit_path,
)
from slurmstack.node.boot import config_sync
from slurmstack.node.context import AgentError
from slurmstack.render import config_store, role_files
from support.node import BUCKET, PLAN, Runner, make_node, publish_config, tamper


def test_sync_config_writes_the_role_files_then_reports_no_change(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    run = Runner()
    node = make_node(tmp_path, aws, "train", run=run)
    changed = config_sync.sync_config(node, poll=0)
    expected = role_files(PLAN, "train")
    assert changed == sorted(expected)
    for path, text in expected.items():
        assert (tmp_path / path.lstrip("/")).read_text() == text
    assert os.stat(tmp_path / "etc/slurmstack/task-prolog.sh").st_mode & 0o777 == 0o755
    assert os.stat(tmp_path / "etc/nccl.conf").st_mode & 0o777 == 0o644
    assert ["systemctl", "daemon-reload"] in run.calls
    assert config_sync.sync_config(node, poll=0) == []


def test_sync_config_rejects_an_object_that_does_not_match_its_hash(aws, tmp_path) -> None:
    publish_config(aws, "head")
    tamper(aws, "head", "/etc/slurm/slurm.conf", b"ClusterName=evil\n")
    node = make_node(tmp_path, aws, "head")
    with pytest.raises(AgentError, match="sha256"):
        config_sync.sync_config(node, poll=0)
    assert not (tmp_path / "etc/slurm/slurm.conf").exists()


def test_sync_config_restarts_slurmctld_when_max_node_count_changes(aws, tmp_path) -> None:
    publish_config(aws, "head")
    old = tmp_path / "etc/slurm/slurm.conf"
    old.parent.mkdir(parents=True)
    old.write_text("MaxNodeCount=1\n")
    run = Runner()
    config_sync.sync_config(make_node(tmp_path, aws, "head", run=run), poll=0)
    assert ["systemctl", "restart", "slurmctld"] in run.calls


def test_sync_config_refuses_a_manifest_that_does_not_match_its_key(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    store = config_store(PLAN)
    aws.client("s3").put_object(Bucket=BUCKET, Key=store.manifest_key, Body=b'{"train": {}}')
    with pytest.raises(AgentError, match="does not match its sha256"):
        config_sync.sync_config(make_node(tmp_path, aws, "train"), poll=0)


def test_sync_config_waits_for_the_manifest(aws, tmp_path: Path) -> None:
    node = make_node(tmp_path, aws, "train")
    with pytest.raises(AgentError, match="did not appear"):
        config_sync.sync_config(node, timeout=30, poll=10)


def test_manifest_sha_keys_name_their_content() -> None:
    store = config_store(PLAN)
    for key, text in store.objects.items():
        assert key == "config/" + hashlib.sha256(text.encode()).hexdigest()
    manifest = read_manifest(store.manifest_json().encode())
    assert manifest.files == store.manifest and manifest.bundles == store.bundles
    for role, files in store.manifest.items():
        carried: dict[str, bytes] = {}
        for key in store.bundles[role]:
            carried |= read_bundle(store.objects[key].encode())
        assert set(carried) == set(files)
        for path, key in files.items():
            assert key == "config/" + hashlib.sha256(carried[path]).hexdigest()


def test_the_store_has_one_bundle_per_role_and_one_for_the_agent() -> None:
    store = config_store(PLAN)
    agent = {store.bundles[role][0] for role in store.bundles}
    assert len(agent) == 1  # every role shares the agent's bundle
    assert len(store.objects) == len(store.bundles) + 1


def test_sync_config_refuses_a_bundle_without_a_listed_file(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    store = config_store(PLAN)
    files = dict(store.manifest["train"])
    files["/etc/slurmstack/extra.conf"] = "config/" + "0" * 64
    manifest = Manifest(files={**store.manifest, "train": files}, bundles=store.bundles)
    body = manifest_json(manifest).encode()
    key = "config/" + hashlib.sha256(body).hexdigest()
    aws.client("s3").put_object(Bucket=BUCKET, Key=key, Body=body)
    aws.client("ssm").put_parameter(
        Name=PLAN.parameter(DeployParameter.CONFIG_MANIFEST), Value=key, Overwrite=True
    )
    with pytest.raises(AgentError, match=r"do not hold /etc/slurmstack/extra\.conf"):
        config_sync.sync_config(make_node(tmp_path, aws, "train"), poll=0)
    assert not (tmp_path / "etc/slurmstack").joinpath("task-prolog.sh").exists()


class SystemctlRunner(Runner):
    def __init__(self, enabled: str) -> None:
        super().__init__()
        self.enabled = enabled

    def __call__(self, cmd: list[str], check: bool = True):

        if cmd[:2] == ["systemctl", "is-enabled"]:
            self.calls.append(cmd)
            return subprocess.CompletedProcess(cmd, 1, f"{self.enabled}\n", "")
        return super().__call__(cmd, check)


@pytest.mark.parametrize(
    ("enabled", "enables"), [("disabled", True), ("masked", False), ("enabled", False)]
)
def test_sync_config_enables_the_controller_timer_on_the_head(
    aws, tmp_path, enabled, enables
) -> None:
    publish_config(aws, "head")
    run = SystemctlRunner(enabled)
    config_sync.sync_config(make_node(tmp_path, aws, "head", run=run), poll=0)
    assert (tmp_path / config_sync.CONTROLLER_TIMER_PATH.lstrip("/")).exists()
    start = ["systemctl", "enable", "--now", config_sync.CONTROLLER_TIMER]
    assert (start in run.calls) is enables
    # The reaper's timer of an older agent is stopped where it is enabled: one loop.
    stop = ["systemctl", "disable", "--now", "slurmstack-reaper.timer"]
    assert (stop in run.calls) is (enabled == "enabled")
    # A pool node has no controller.
    pool = SystemctlRunner("disabled")
    config_sync.sync_config(make_node(tmp_path / "pool", aws, "train", run=pool), poll=0)
    assert not any(config_sync.CONTROLLER_TIMER in c for c in pool.calls)


@pytest.mark.parametrize("role", ["head", "train"])
@pytest.mark.parametrize(("enabled", "enables"), [("disabled", True), ("masked", False)])
def test_sync_config_starts_the_monitoring_units_the_role_received(
    aws, tmp_path, role, enabled, enables
) -> None:
    """The exporters, the metrics timer and the head's Prometheus, Alertmanager, relay and
    Grafana arrive through the config store and start with the first sync (and on a node that
    gets them from a change); a unit the role did not receive is never touched."""
    publish_config(aws, role)
    run = SystemctlRunner(enabled)
    mounts = tmp_path / "proc/mounts"
    mounts.parent.mkdir(parents=True)
    mounts.write_text(f"/dev/nvme1n1 {STATE_VOLUME_MOUNT} ext4 rw 0 0\n")
    config_sync.sync_config(make_node(tmp_path, aws, role, run=run), poll=0)
    received = {u for u in MONITORING_UNITS if (tmp_path / unit_path(u).lstrip("/")).exists()}
    head = {PROMETHEUS_UNIT, ALERTMANAGER_UNIT, ALERT_RELAY_UNIT, GRAFANA_UNIT}
    assert {NODE_EXPORTER_UNIT, METRICS_TIMER} <= received
    assert (head <= received) is (role == "head")
    assert (DCGM_EXPORTER_UNIT in received) is (
        role != "head" and PLAN.pool(role).expected_gpus > 0
    )
    started = {c[-1] for c in run.calls if c[:3] == ["systemctl", "enable", "--now"]}
    assert (started & set(MONITORING_UNITS)) == (received if enables else set())


def test_prometheus_waits_for_the_state_volume(aws, tmp_path) -> None:
    """The head's first sync runs before its state volume is mounted: Prometheus, whose
    samples live there, is left disabled (started, it would write under the bare mount point
    on the root disk); the boot's sync after the volume starts it."""
    publish_config(aws, "head")
    first = SystemctlRunner("disabled")
    node = make_node(tmp_path, aws, "head", run=first)
    config_sync.sync_config(node, poll=0)
    started = {c[-1] for c in first.calls if c[:3] == ["systemctl", "enable", "--now"]}
    assert PROMETHEUS_UNIT not in started
    assert {NODE_EXPORTER_UNIT, ALERTMANAGER_UNIT} <= started  # the others do not wait
    mounts = tmp_path / "proc/mounts"
    mounts.parent.mkdir(parents=True)
    mounts.write_text(f"/dev/nvme1n1 {STATE_VOLUME_MOUNT} ext4 rw 0 0\n")
    second = SystemctlRunner("disabled")
    config_sync.sync_config(make_node(tmp_path, aws, "head", run=second), poll=0)
    assert ["systemctl", "enable", "--now", PROMETHEUS_UNIT] in second.calls


def test_sync_config_removes_a_topology_file_the_head_no_longer_has(aws, tmp_path) -> None:
    """p5-training's head has topology.conf; a topology.yaml left from an UltraServer pool
    since removed would override it (slurmctld reads topology.yaml whenever it exists)."""
    publish_config(aws, "head")
    stale = tmp_path / TOPOLOGY_YAML_PATH.lstrip("/")
    stale.parent.mkdir(parents=True)
    stale.write_text("- topology: default\n")
    changed = config_sync.sync_config(make_node(tmp_path, aws, "head", run=Runner()), poll=0)
    assert TOPOLOGY_YAML_PATH in changed and not stale.exists()
    assert (tmp_path / TOPOLOGY_CONF_PATH.lstrip("/")).exists()
