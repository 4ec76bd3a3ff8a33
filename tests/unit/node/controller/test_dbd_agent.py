"""dbd_agent: a queue for slurmdbd that stays non-empty without shrinking for STALL_SECONDS
while slurmdbd answers gets one `scontrol reconfigure`; a queue that shrinks, one that empties,
one waiting for a slurmdbd that does not answer, and a second stall within
RESTART_AGAIN_SECONDS get none; the watch survives the controller (it is a file)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from slurmstack.node.controller import dbd_agent

SDIAG = """*******************************************************
sdiag output at Thu Dec 03 12:00:00 2026 (1764763200)
Data since      Thu Dec 03 11:58:00 2026 (1764763080)
*******************************************************
Server thread count:  1
RPC queue enabled:    0
Agent queue size:     0
Agent count:          0
Agent thread count:   0
DBD Agent queue size: {queued}

Jobs submitted: 4
"""


class Controller:
    """What dbd_agent uses of the node agent's context: the state volume, and sdiag, sacctmgr
    and scontrol answering as set."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.queued: int | None = 0  # None: slurmctld does not answer
        self.slurmdbd_up = True
        self.calls: list[tuple[str, ...]] = []

    def path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def bounded(self, _seconds: float, *cmd: str, check: bool = False):  # type: ignore[no-untyped-def]
        self.calls.append(cmd)
        if cmd[0] == "sdiag":
            if self.queued is None:
                return subprocess.CompletedProcess(cmd, 1, "", "Unable to contact slurm controller")
            return subprocess.CompletedProcess(cmd, 0, SDIAG.format(queued=self.queued), "")
        if cmd[0] == "sacctmgr":
            return subprocess.CompletedProcess(cmd, 0 if self.slurmdbd_up else 1, "vha\n", "")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    def reconfigures(self) -> int:
        return self.calls.count(("scontrol", "reconfigure"))


def watch(ctl: Controller, now: float) -> dict | None:
    return dbd_agent.watch_dbd_agent(ctl, now)  # type: ignore[arg-type]


def test_sdiag_is_read_for_the_queue(tmp_path: Path) -> None:
    ctl = Controller(tmp_path)
    ctl.queued = 9
    assert dbd_agent.queue_size(ctl) == 9  # type: ignore[arg-type]
    ctl.queued = None
    assert dbd_agent.queue_size(ctl) is None  # type: ignore[arg-type]


def test_a_queue_that_does_not_shrink_while_slurmdbd_answers_gets_one_reconfigure(
    tmp_path: Path,
) -> None:
    ctl = Controller(tmp_path)
    ctl.queued = 9
    assert watch(ctl, 1000.0) is None  # first seen
    ctl.queued = 11  # more records, none sent
    assert watch(ctl, 1000.0 + dbd_agent.STALL_SECONDS - 1) is None  # not long enough
    restarted = watch(ctl, 1000.0 + dbd_agent.STALL_SECONDS)
    assert restarted == {"queued": 11, "stalled_seconds": round(dbd_agent.STALL_SECONDS)}
    assert ctl.reconfigures() == 1
    # Still stuck a pass later, watched again from there; no second reconfigure within
    # RESTART_AGAIN_SECONDS.
    for later in (1060.0, 1120.0, 1180.0):
        assert watch(ctl, later) is None
    assert ctl.reconfigures() == 1
    assert watch(ctl, 1000.0 + dbd_agent.STALL_SECONDS + dbd_agent.RESTART_AGAIN_SECONDS)
    assert ctl.reconfigures() == 2


def test_a_queue_that_shrinks_or_empties_is_left_alone(tmp_path: Path) -> None:
    ctl = Controller(tmp_path)
    now = 1000.0
    for queued in (500, 400, 450, 300, 0, 7, 7):  # 450: more came than went, then it sent
        ctl.queued = queued
        assert watch(ctl, now) is None
        now += dbd_agent.STALL_SECONDS / 2 + 1  # two looks never span a whole stall
    assert ctl.reconfigures() == 0
    # 7 queued since two looks ago (the watch started again when the queue emptied): stalled.
    ctl.queued = 7
    assert watch(ctl, now) is not None


def test_a_queue_waiting_for_slurmdbd_is_left_alone(tmp_path: Path) -> None:
    ctl = Controller(tmp_path)
    ctl.queued, ctl.slurmdbd_up = 9, False
    watch(ctl, 1000.0)
    assert watch(ctl, 1000.0 + 10 * dbd_agent.STALL_SECONDS) is None
    assert ctl.reconfigures() == 0
    ctl.slurmdbd_up = True  # back, and the agent still sends nothing: restarted
    assert watch(ctl, 1000.0 + 11 * dbd_agent.STALL_SECONDS) is not None


def test_nothing_is_done_when_slurmctld_does_not_answer(tmp_path: Path) -> None:
    ctl = Controller(tmp_path)
    ctl.queued = 9
    watch(ctl, 1000.0)
    ctl.queued = None
    assert watch(ctl, 2000.0) is None
    assert ctl.reconfigures() == 0
