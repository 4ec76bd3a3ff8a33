"""full_save: a state directory with the cluster's name but without a core state file (a new
cluster's slurmctld before its first full save) gets one `scontrol reconfigure`, which makes
slurmctld save every file; a fresh directory, a complete one, and a second pass within
ASK_AGAIN_SECONDS get none; a failed reconfigure is logged, not raised."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from slurmstack.contract import FULL_SAVE_ASKED_PATH, STATE_SAVE_LOCATION
from slurmstack.node.controller import full_save


class Head:
    """What full_save uses of the node agent's context: the state volume, scontrol, the clock
    (a second per sleep)."""

    def __init__(self, root: Path, fails: bool = False) -> None:
        self.root = root
        self.calls: list[tuple[str, ...]] = []
        self.fails = fails
        self.now = 1000.0
        self.slept = 0
        self.on_sleep: list[Callable[[], object]] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += 1
        if self.on_sleep:
            self.on_sleep.pop(0)()

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
    # Not remembered as asked: the next pass asks again.
    full_save.ask_for_full_save(head, now=1060.0)  # type: ignore[arg-type]
    assert len(head.calls) == 2


def test_at_boot_it_waits_for_slurmctld_to_name_the_cluster_then_asks(tmp_path: Path) -> None:
    head = Head(tmp_path)
    directory = state(head, "node_state")
    head.on_sleep = [lambda: None, lambda: (directory / "clustername").write_bytes(b"vc")]
    missing = full_save.full_save_at_boot(head)  # type: ignore[arg-type]
    assert missing is not None and "assoc_usage" in missing
    assert head.slept == 2 and head.calls == [("scontrol", "reconfigure")]


def test_at_boot_a_saved_state_returns_at_once_and_a_silent_slurmctld_in_bounded_time(
    tmp_path: Path,
) -> None:
    saved = Head(tmp_path / "saved")
    state(saved, "clustername", *full_save.CORE_STATE_FILES)
    assert full_save.full_save_at_boot(saved) is None  # type: ignore[arg-type]
    assert saved.slept == 0 and saved.calls == []
    silent = Head(tmp_path / "silent", fails=True)
    state(silent, "clustername")
    assert full_save.full_save_at_boot(silent) is None  # type: ignore[arg-type]
    assert silent.slept == full_save.BOOT_WAIT_SECONDS
    assert len(silent.calls) == full_save.BOOT_WAIT_SECONDS
