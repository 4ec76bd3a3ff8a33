"""full_save: a state directory with the cluster's name but without a core state file (a new
cluster's slurmctld before its first full save) gets one `scontrol reconfigure`, which makes
slurmctld save every file; a fresh directory, a complete one, and a second pass within
ASK_AGAIN_SECONDS get none; a failed reconfigure is logged, not raised."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from slurmstack.contract import FULL_SAVE_ASKED_PATH, STATE_SAVE_LOCATION
from slurmstack.node.controller import full_save


class Head:
    """What full_save uses of the node agent's context: the state volume, scontrol."""

    def __init__(self, root: Path, fails: bool = False) -> None:
        self.root = root
        self.calls: list[tuple[str, ...]] = []
        self.fails = fails

    def path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def bounded(self, _seconds: float, *cmd: str, check: bool = False):  # type: ignore[no-untyped-def]
        self.calls.append(cmd)
        code = 1 if self.fails else 0
        return subprocess.CompletedProcess(cmd, code, "", "Unable to contact" if code else "")


def state(head: Head, *files: str) -> Path:
    directory = head.path(STATE_SAVE_LOCATION)
    directory.mkdir(parents=True, exist_ok=True)
    for name in files:
        (directory / name).write_bytes(b"\0")
    return directory


def test_a_new_clusters_state_gets_one_reconfigure(tmp_path: Path) -> None:
    head = Head(tmp_path)
    state(head, "clustername", "node_state", "job_state")
    missing = full_save.ask_for_full_save(head, now=1000.0)  # type: ignore[arg-type]
    assert missing == ["resv_state", "trigger_state", "fed_mgr_state", "assoc_usage"]
    assert head.calls == [("scontrol", "reconfigure")]
    # The next pass, a minute on, the files still missing (slurmctld re-executing): not again.
    assert full_save.ask_for_full_save(head, now=1060.0) is None  # type: ignore[arg-type]
    assert len(head.calls) == 1
    # Past ASK_AGAIN_SECONDS, still missing (a release whose reconfigure saves nothing): again.
    later = 1000.0 + full_save.ASK_AGAIN_SECONDS
    assert full_save.ask_for_full_save(head, now=later) is not None  # type: ignore[arg-type]
    assert len(head.calls) == 2


@pytest.mark.parametrize(
    "files",
    [
        (),  # slurmctld has not started: its first start needs no file
        ("node_state",),  # no cluster name yet: the same
        ("clustername", *full_save.CORE_STATE_FILES),  # saved in full
    ],
)
def test_nothing_is_asked_when_slurmctld_can_start(tmp_path: Path, files: tuple[str, ...]) -> None:
    head = Head(tmp_path)
    state(head, *files)
    assert full_save.ask_for_full_save(head, now=1000.0) is None  # type: ignore[arg-type]
    assert head.calls == []
    assert not head.path(FULL_SAVE_ASKED_PATH).exists()


def test_a_failed_reconfigure_is_logged_and_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = Head(tmp_path, fails=True)
    state(head, "clustername")
    assert full_save.ask_for_full_save(head, now=1000.0) is None  # type: ignore[arg-type]
    assert "full state save failed" in capsys.readouterr().err
    assert head.calls == [("scontrol", "reconfigure")]
