"""volumes: shared file systems mounted and answering in time; root and scratch not full."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack.contract import Health, Mount, MountKind, NodeConfig, Scratch
from slurmstack.node.health import volumes
from support.node import Answers, make_node, mounted_everything

MOUNTS = (Mount(MountKind.LUSTRE, "/fsx"), Mount(MountKind.EFS, "/home"))


def test_file_systems_answer(tmp_path: Path) -> None:
    mounted_everything(tmp_path, ["/fsx", "/home"])
    run = Answers()
    node = make_node(tmp_path, None, "train", run=run)
    assert volumes.file_system_findings(node, MOUNTS, 5) == []
    assert ["stat", "-f", "-c", "%T", "/fsx"] in run.calls


def test_a_hung_or_missing_file_system(tmp_path: Path) -> None:
    mounted_everything(tmp_path, ["/fsx"])
    node = make_node(tmp_path, None, "train", run=Answers({("stat", "-f"): (124, "")}))
    found = [(f.check.value, f.detail) for f in volumes.file_system_findings(node, MOUNTS, 5)]
    assert found == [
        ("file-system", "/fsx (lustre) did not answer within 5 s"),
        ("file-system", "/home (efs) is not mounted"),
    ]


@pytest.mark.parametrize(("limit", "full"), [(100, False), (50, True)])
def test_a_nearly_full_volume(tmp_path: Path, monkeypatch, limit: int, full: bool) -> None:
    (tmp_path / "scratch").mkdir()
    node = make_node(tmp_path, None, "train")
    monkeypatch.setattr(volumes, "used_percent", lambda path: 97.0 if "scratch" in path else 1.0)
    config = NodeConfig(
        "c", "r", "train", "/p", "s", (), scratch=Scratch("/scratch"),
        health=Health(disk_full_percent=limit),
    )  # fmt: skip
    found = [f.detail for f in volumes.disk_findings(node, config)]
    assert found == ([f"/scratch is 97% full (limit {limit}%)"] if full else [])


def test_used_percent_counts_as_df_does(tmp_path: Path) -> None:
    assert 0.0 < volumes.used_percent(str(tmp_path)) < 100.0
