"""The node's file systems as the steps see them: fstab entries, the mount table, retries."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack.node import system
from slurmstack.node.context import AgentError, Context
from support.node import Runner


def test_fstab_keeps_one_entry_per_mount_point(tmp_path: Path) -> None:
    ctx = Context(root=tmp_path)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/fstab").write_text("LABEL=root / ext4 defaults 0 1\n")
    system.fstab(ctx, "fs-1:/", "/home", "nfs4", "_netdev")
    system.fstab(ctx, "fs-2:/", "/home", "nfs4", "_netdev")
    assert (tmp_path / "etc/fstab").read_text().splitlines() == [
        "LABEL=root / ext4 defaults 0 1",
        "fs-2:/ /home nfs4 _netdev 0 0",
    ]


def test_the_mount_table_is_read_under_the_root(tmp_path: Path) -> None:
    ctx = Context(root=tmp_path)
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/mounts").write_text("/dev/md127 /scratch ext4 rw 0 0\n")
    assert system.mounted(ctx, "/scratch") and not system.mounted(ctx, "/fsx")
    assert system.mount_point_of(ctx, "/dev/md127") == "/scratch"


def test_retry_sleeps_between_attempts_and_gives_up(tmp_path: Path) -> None:
    slept: list[float] = []
    ctx = Context(root=tmp_path, run=Runner(fail={"mount"}), sleep=slept.append)
    with pytest.raises(AgentError, match="failed 3 times"):
        system.retry(ctx, ["mount", "/fsx"], attempts=3, delay=2.0)
    assert slept == [2.0, 2.0]
