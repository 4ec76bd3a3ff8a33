"""periodic: Slurm's HealthCheckProgram. A finding drains the node once, with one reason; the
kernel log's position moves on only when the node acted on what it found; a node drained for a
passing condition returns to service; EC2's notices are read from the metadata service."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurmstack.contract import HEALTH_LOG_PATH
from slurmstack.node.boot import config_sync
from slurmstack.node.context import Context
from slurmstack.node.health import periodic
from slurmstack.node.health.devices import GPU_QUERY
from support.node import (
    Answers,
    fake_devices,
    identity,
    kernel_log,
    make_node,
    mounted_everything,
    nvidia_smi,
    publish_config,
)

NAME = "train-1811"
FELL_OFF = "NVRM: Xid (PCI:0000:10:1c): 79, pid=1896, GPU has fallen off the bus."


def record(state: str, reason: str = "") -> str:
    line = f"NodeName={NAME} Arch=x86_64 CPUAlloc=0 State={state} Partitions=train"
    return line + (f" Reason={reason} [root@2025-01-01T00:00:00]" if reason else "") + "\n"


def node_with(
    tmp_path: Path, aws, monkeypatch, state: str = "IDLE+DYNAMIC_NORM", reason: str = "", **extra
) -> tuple[Context, Answers]:
    publish_config(aws, "train")
    run = Answers(
        {
            GPU_QUERY[:2]: (0, nvidia_smi(8)),
            ("scontrol", "--oneliner", "show", "node"): (0, record(state, reason)),
            **extra.pop("answers", {}),
        }
    )
    metadata = {"instance-id": "i-1", "dynamic/instance-identity/document": identity("i-1")}
    metadata.update(extra.pop("metadata", {}))
    node = make_node(tmp_path, aws, "train", run=run, imds=metadata.__getitem__)
    config_sync.sync_config(node, poll=0)
    fake_devices(tmp_path, gpus=8, efa=32)
    mounted_everything(tmp_path, ["/home", "/fsx"])
    monkeypatch.setenv("SLURMD_NODENAME", NAME)
    run.calls.clear()
    return node, run


def drains(run: Answers) -> list[list[str]]:
    return [c for c in run.calls if c[:2] == ["scontrol", "update"]]


def test_a_healthy_node_is_left_alone(aws, tmp_path: Path, monkeypatch) -> None:
    node, run = node_with(tmp_path, aws, monkeypatch)
    assert periodic.health_check(node) == 0
    assert drains(run) == []


def test_a_new_critical_xid_drains_the_node_once(aws, tmp_path: Path, monkeypatch) -> None:
    node, run = node_with(tmp_path, aws, monkeypatch)
    kernel_log(tmp_path, FELL_OFF)
    assert periodic.health_check(node) == 1
    reason = "slurmstack:gpu-xid: 79 pid=1896, GPU has fallen off the bus (PCI:0000:10:1c)"
    assert drains(run) == [
        ["scontrol", "update", f"nodename={NAME}", "state=drain", f"reason={reason}"]
    ]
    assert reason in (tmp_path / HEALTH_LOG_PATH.lstrip("/")).read_text()
    keys = aws.client("s3").list_objects_v2(Bucket="llm-train-bucket", Prefix="logs/train/")
    assert any(k["Key"].endswith("/shipped.json") for k in keys["Contents"])
    run.calls.clear()
    assert periodic.health_check(node) == 0  # seen: not new any more
    assert drains(run) == []


def test_before_the_node_is_registered_the_finding_waits(aws, tmp_path, monkeypatch) -> None:
    """slurmd's first run, before registration: the drain fails, the XID is found again."""
    failing = {("scontrol", "update"): (1, "Invalid node name specified")}
    node, run = node_with(tmp_path, aws, monkeypatch, answers=failing)
    kernel_log(tmp_path, FELL_OFF)
    assert periodic.health_check(node) == 1
    run.answers.pop(("scontrol", "update"))
    run.calls.clear()
    assert periodic.health_check(node) == 1
    assert len(drains(run)) == 1 and "gpu-xid: 79" in drains(run)[0][-1]


def test_the_first_reason_stays(aws, tmp_path: Path, monkeypatch) -> None:
    node, run = node_with(
        tmp_path, aws, monkeypatch, state="IDLE+DRAIN+DYNAMIC_NORM", reason="maintenance (bob)"
    )
    kernel_log(tmp_path, FELL_OFF)
    assert periodic.health_check(node) == 1
    assert drains(run) == []
    assert "gpu-xid: 79" in (tmp_path / HEALTH_LOG_PATH.lstrip("/")).read_text()


def test_a_spot_notice_drains_with_when(aws, tmp_path: Path, monkeypatch) -> None:
    notice = json.dumps({"action": "terminate", "time": "2025-03-01T12:02:00Z"})
    node, run = node_with(tmp_path, aws, monkeypatch, metadata={periodic.SPOT_NOTICE: notice})
    assert periodic.health_check(node) == 1
    assert drains(run)[0][-1] == (
        "reason=slurmstack:spot-interruption: EC2 will terminate this spot instance at "
        "2025-03-01T12:02:00Z"
    )


def test_a_file_system_back_in_time_resumes_the_node(aws, tmp_path, monkeypatch) -> None:
    node, run = node_with(
        tmp_path, aws, monkeypatch, state="IDLE+DRAIN+DYNAMIC_NORM",
        reason="slurmstack:file-system: /fsx (lustre) did not answer within 5 s",
    )  # fmt: skip
    assert periodic.health_check(node) == 0
    assert drains(run) == [["scontrol", "update", f"nodename={NAME}", "state=resume"]]


@pytest.mark.parametrize("check", ["gpu-xid: 79 x", "disk-full: / is 99% full"])
def test_other_reasons_are_not_resumed(aws, tmp_path, monkeypatch, check: str) -> None:
    node, run = node_with(
        tmp_path, aws, monkeypatch, state="IDLE+DRAIN+DYNAMIC_NORM", reason=f"slurmstack:{check}"
    )
    if check.startswith("disk-full"):
        monkeypatch.setattr("slurmstack.node.health.volumes.used_percent", lambda _p: 99.0)
    periodic.health_check(node)
    assert drains(run) == []


def test_a_terminating_instance_ships_its_logs_once(aws, tmp_path: Path, monkeypatch) -> None:
    node, _run = node_with(
        tmp_path, aws, monkeypatch, metadata={periodic.TARGET_LIFECYCLE_STATE: "Terminated"}
    )
    s3 = aws.client("s3")
    assert periodic.health_check(node) == 0
    first = s3.list_objects_v2(Bucket="llm-train-bucket", Prefix="logs/")["Contents"]
    assert periodic.health_check(node) == 0
    again = s3.list_objects_v2(Bucket="llm-train-bucket", Prefix="logs/")["Contents"]
    assert [o["LastModified"] for o in first] == [o["LastModified"] for o in again]
