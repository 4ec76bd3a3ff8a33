"""job-dirs: enroot's directories on a pool's node, the checkpoint directory on the head's
Lustre; world-writable and sticky, made again when they are gone."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from slurmstack.node.boot import config_sync
from slurmstack.node.context import AgentError
from slurmstack.node.workload import job_dirs
from support.node import make_node, publish_config

pytestmark = pytest.mark.workload


def synced(aws, tmp_path: Path, role: str):
    publish_config(aws, role)
    node = make_node(tmp_path, aws, role)
    config_sync.sync_config(node, poll=0)
    return node


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode) | (path.stat().st_mode & stat.S_ISVTX)


def test_enroot_directories_on_the_scratch(aws, tmp_path: Path) -> None:
    node = synced(aws, tmp_path, "train")
    made = job_dirs.job_dirs(node)
    assert made == [
        "/run/enroot",
        "/scratch/enroot/data",
        "/scratch/enroot/cache",
        "/scratch/enroot/tmp",
    ]
    for path in made:
        assert mode(tmp_path / path.lstrip("/")) == 0o1777, path
    # Every path of enroot.conf is one of them (its temporary directory) or a per-user
    # directory enroot makes in one of them.
    conf = (tmp_path / "etc/enroot/enroot.conf").read_text()
    paths = [line.split()[1] for line in conf.splitlines() if re.match(r"ENROOT_\w+_PATH ", line)]
    assert len(paths) == 4
    for value in paths:
        assert value in made or value.rsplit("/", 1)[0] in made, value
    # A blank scratch (stop and start) or a new /run: made again.
    (tmp_path / "scratch/enroot/tmp").rmdir()
    assert job_dirs.job_dirs(node) == made and (tmp_path / "scratch/enroot/tmp").is_dir()


def test_the_checkpoint_directory_on_the_heads_lustre(aws, tmp_path: Path) -> None:
    node = synced(aws, tmp_path, "head")
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/mounts").write_text("fs@tcp:/abc /fsx lustre rw 0 0\n")
    assert job_dirs.job_dirs(node) == ["/fsx/checkpoints"]
    assert mode(tmp_path / "fsx/checkpoints") == 0o1777
    (tmp_path / "proc/mounts").write_text("")
    with pytest.raises(AgentError, match="/fsx is not mounted"):
        job_dirs.job_dirs(node)
