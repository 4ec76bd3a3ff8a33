"""accounting-apply (slurmstack/node/apply.py): observe with sacctmgr, decide, act, and
keep the record of what slurmstack created on the state volume. sacctmgr is scripted here;
tests/accounting runs the real one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from node.test_association_plan import DESIRED, observed
from slurmstack.contract import (
    ACCOUNTING_CONFIG_PATH,
    ACCOUNTING_OWNED_PATH,
    dump_document,
)
from slurmstack.node import cli
from slurmstack.node.accounting import apply
from slurmstack.node.context import AgentError, Context


class Sacctmgr:
    """sacctmgr's answers to `show`, scripted; every other command recorded (and refused when
    ``refuse`` names its verb)."""

    def __init__(self, shows: dict[str, list[str]], refuse: str = "") -> None:
        self.shows, self.refuse = shows, refuse
        self.writes: list[list[str]] = []
        self.pings, self.down_pings = 0, 0  # scontrol ping answers DOWN that many times first
        self.calls: list[str] = []

    def __call__(self, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        if cmd == ["scontrol", "ping"]:
            self.pings += 1
            up = self.pings > self.down_pings
            self.calls.append(f"ping {'up' if up else 'down'}")
            state = "UP" if up else "DOWN"
            return subprocess.CompletedProcess(
                cmd, 0 if up else 1, f"Slurmctld(primary) at c is {state}\n", ""
            )
        assert cmd[0] == "sacctmgr"
        if "show" in cmd:
            what = cmd[cmd.index("show") + 1]
            answers = self.shows[what]
            out = answers.pop(0) if len(answers) > 1 else answers[0]
            return subprocess.CompletedProcess(cmd, 0, out, "")
        self.writes.append(cmd)
        self.calls.append("write")
        code = 1 if self.refuse and self.refuse in cmd else 0
        return subprocess.CompletedProcess(cmd, code, "", "already exists" if code else "")


def apply_node(tmp_path: Path, sacctmgr: Sacctmgr) -> Context:
    config = tmp_path / ACCOUNTING_CONFIG_PATH.lstrip("/")
    config.parent.mkdir(parents=True)
    config.write_text(dump_document(DESIRED))
    return Context(root=tmp_path, run=sacctmgr)


EMPTY = {
    "qos": ["normal|Normal QOS default|0|||||\n"],
    "assoc": ["root||||normal||\n"],
    "user": ["root|root\n"],
    "account": ["root|default root account\n"],
    "cluster": ["c\n"],
}


def test_a_cluster_slurmctld_registered_meanwhile_is_not_an_error(tmp_path: Path) -> None:
    # Not there, the add fails (slurmctld added it first), there now.
    sacctmgr = Sacctmgr({"cluster": ["", "c\n"]}, refuse="add")
    apply.ensure_cluster(apply_node(tmp_path, sacctmgr), "c")
    assert sacctmgr.writes == [["sacctmgr", "-i", "add", "cluster", "c"]]
    gone = Sacctmgr({"cluster": [""]}, refuse="add")
    with pytest.raises(AgentError, match="cannot add cluster c"):
        apply.ensure_cluster(apply_node(tmp_path / "x", gone), "c")


def test_dry_run_changes_nothing_and_apply_records_ownership(tmp_path: Path) -> None:
    sacctmgr = Sacctmgr({k: list(v) for k, v in EMPTY.items()})
    ctx = apply_node(tmp_path, sacctmgr)
    state = tmp_path / ACCOUNTING_OWNED_PATH.lstrip("/")
    assert str(state).startswith(f"{tmp_path}/var/spool/slurmctld/")  # the state volume
    planned = apply.accounting_apply(ctx, dry_run=True)
    assert planned["done"][0] == "add qos big" and sacctmgr.writes == []
    assert not state.exists()
    result = apply.accounting_apply(ctx)
    assert result["done"] == planned["done"] and result["failed"] == {}
    owned = json.loads(state.read_text())
    # Recorded as theirs; nothing slurmdbd still shows as absent survives in the record the
    # next time (the scripted sacctmgr never changes, so the next apply prunes it all).
    assert owned == {"accounts": ["a", "b"], "members": ["u@a", "u@b"], "qos": ["big"]}
    assert oct(state.stat().st_mode & 0o777) == "0o600"
    apply.accounting_apply(ctx, dry_run=True)
    again = apply.owned(ctx, observed("root||||normal||\n"))
    assert again == {"qos": [], "accounts": [], "members": []}


def test_a_refused_command_is_reported_and_fails_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What sacctmgr refuses is named with its answer; the rest is still done; exit 1, so the
    apply-config document shows the failure."""
    sacctmgr = Sacctmgr({k: list(v) for k, v in EMPTY.items()}, refuse="qos")
    ctx = apply_node(tmp_path, sacctmgr)
    assert cli.main(["--root", str(tmp_path), "accounting-apply"], ctx=ctx) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] == {"add qos big": "already exists"}
    assert "add account a" in result["done"]
    owned = json.loads((tmp_path / ACCOUNTING_OWNED_PATH.lstrip("/")).read_text())
    assert owned["qos"] == [] and owned["accounts"] == ["a", "b"]


def test_changes_wait_until_slurmctld_answers(tmp_path: Path) -> None:
    """slurmdbd forgets a controller that refuses a pushed change (still starting, registered
    but not listening): the first change waits until slurmctld answers a ping."""
    sacctmgr = Sacctmgr({k: list(v) for k, v in EMPTY.items()})
    sacctmgr.down_pings = 3
    slept: list[float] = []
    ctx = Context(root=apply_node(tmp_path, sacctmgr).root, run=sacctmgr, sleep=slept.append)
    result = apply.accounting_apply(ctx)
    assert result["failed"] == {} and result["done"]
    assert sacctmgr.calls[:4] == ["ping down"] * 3 + ["ping up"] and sum(slept) == 6.0
    assert "ping down" not in sacctmgr.calls[4:] and "write" in sacctmgr.calls[4:]
    # A controller that stays down: the changes still go to the database after the wait.
    down = Sacctmgr({k: list(v) for k, v in EMPTY.items()})
    down.down_pings = 10**6
    waited: list[float] = []
    ctx = Context(root=apply_node(tmp_path / "x", down).root, run=down, sleep=waited.append)
    assert apply.wait_for_controller(ctx, timeout=10, poll=2) is False
    assert sum(waited) == 10
