"""The head node's apply-config document (SSM Run Command), its script run for real by /bin/sh
against stand-ins for the agent and scontrol: green while the head's bootstrap runs, red with
the failed step when it failed, and once it is done, applying the manifest and retrying
`scontrol reconfigure` (bounded) until slurmctld answers."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from slurmstack.contract import AGENT_PATH, BOOTSTRAP_DONE, BOOTSTRAP_FAILED
from slurmstack.stack.config_store import (
    APPLY_TIMEOUT_SECONDS,
    MANIFEST_HASH_PARAMETER,
    RECONFIGURE_ATTEMPTS,
    RECONFIGURE_DELAY_SECONDS,
    SCONTROL,
    apply_config_commands,
    apply_config_document,
)
from support.examples import example_plan

HASH = "a" * 64


@dataclass
class Head:
    """A head node's markers and commands under tmp_path; each stand-in appends its name to
    calls.log and exits with the next code from its list (the last one repeats)."""

    root: Path

    def command(self, name: str, codes: list[int]) -> str:
        codes_file = self.root / f"{name}.codes"
        codes_file.write_text("\n".join(str(c) for c in codes) + "\n")
        script = self.root / name
        script.write_text(
            "#!/bin/sh\n"
            f'echo "{name} $*" >> "{self.root}/calls.log"\n'
            f'code=$(head -n 1 "{codes_file}")\n'
            f'if [ "$(wc -l < "{codes_file}")" -gt 1 ]; then sed -i 1d "{codes_file}"; fi\n'
            'exit "$code"\n'
        )
        script.chmod(0o755)
        return str(script)

    def calls(self) -> list[str]:
        log = self.root / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    def mark(self, marker: str, text: str) -> None:
        path = self.root / marker.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def run(self, agent: list[int], scontrol: list[int]) -> subprocess.CompletedProcess[str]:
        lines = apply_config_commands(
            agent=self.command("slurmstack-node", agent),
            scontrol=self.command("scontrol", scontrol),
            done_marker=str(self.root / BOOTSTRAP_DONE.lstrip("/")),
            failed_marker=str(self.root / BOOTSTRAP_FAILED.lstrip("/")),
            delay=0,
        )
        # As Run Command does: the lines are one script, the document's parameter filled in.
        script = "\n".join(lines).replace("{{ " + MANIFEST_HASH_PARAMETER + " }}", HASH)
        env = {"PATH": os.environ["PATH"]}
        return subprocess.run(
            ["/bin/sh", "-c", script], capture_output=True, text=True, env=env, timeout=60
        )


@pytest.fixture
def head(tmp_path: Path) -> Head:
    return Head(tmp_path)


def test_before_the_bootstrap_is_done_it_succeeds_doing_nothing(head: Head) -> None:
    result = head.run(agent=[0], scontrol=[0])
    assert result.returncode == 0, result.stderr
    assert "still running" in result.stdout and HASH in result.stdout
    assert head.calls() == []


def test_a_failed_bootstrap_fails_it_with_the_step(head: Head) -> None:
    head.mark(BOOTSTRAP_FAILED, "2025-01-01T00:00:00Z step `slurmstack-node state-volume`: exit 1")
    result = head.run(agent=[0], scontrol=[0])
    assert result.returncode == 1
    assert "slurmstack-node state-volume" in result.stderr
    assert head.calls() == []


def test_once_done_it_retries_reconfigure_until_slurmctld_answers(head: Head) -> None:
    head.mark(BOOTSTRAP_DONE, "done")
    # A later step may fail (a mount); configuration changes still apply.
    head.mark(BOOTSTRAP_FAILED, "step `slurmstack-node mounts`: exit 1")
    result = head.run(agent=[0], scontrol=[1, 1, 0])
    assert result.returncode == 0, result.stderr
    assert head.calls() == [
        "slurmstack-node sync-config",
        "slurmstack-node accounting-db",
        "scontrol reconfigure",
        "scontrol reconfigure",
        "scontrol reconfigure",
        "slurmstack-node identities",
        "slurmstack-node accounting-apply",
    ]
    assert "attempt 2 of 30" in result.stdout and "configuration applied" in result.stdout


def test_a_slurmctld_that_never_answers_fails_it_after_the_last_attempt(head: Head) -> None:
    head.mark(BOOTSTRAP_DONE, "done")
    result = head.run(agent=[0], scontrol=[1])
    assert result.returncode == 1
    assert head.calls().count("scontrol reconfigure") == RECONFIGURE_ATTEMPTS
    assert f"in {RECONFIGURE_ATTEMPTS} attempts" in result.stderr


def test_a_failed_sync_fails_it_without_reconfiguring(head: Head) -> None:
    head.mark(BOOTSTRAP_DONE, "done")
    result = head.run(agent=[1], scontrol=[0])
    assert result.returncode == 1
    assert head.calls() == ["slurmstack-node sync-config"]


def test_accounting_db_runs_before_reconfigure_and_its_failure_stops_it(head: Head) -> None:
    """slurmctld must not read a slurm.conf that points at a slurmdbd that is not up."""
    head.mark(BOOTSTRAP_DONE, "done")
    result = head.run(agent=[0, 1], scontrol=[0])
    assert result.returncode == 1
    assert head.calls() == ["slurmstack-node sync-config", "slurmstack-node accounting-db"]
    assert "accounting-db failed" in result.stderr


def test_a_failed_accounting_apply_fails_it_after_reconfiguring(head: Head) -> None:
    head.mark(BOOTSTRAP_DONE, "done")
    result = head.run(agent=[0, 0, 0, 1], scontrol=[0])
    assert result.returncode == 1
    # The people first (a removed person is locked before losing the association).
    assert head.calls()[-3:] == [
        "scontrol reconfigure",
        "slurmstack-node identities",
        "slurmstack-node accounting-apply",
    ]
    assert "accounting-apply failed" in result.stderr and "configuration applied" not in (
        result.stdout
    )


def test_the_document_runs_that_script_within_its_timeout() -> None:
    doc = json.loads(apply_config_document(example_plan("p5-training")))
    (step,) = doc["mainSteps"]
    assert step["action"] == "aws:runShellScript"
    assert step["inputs"]["runCommand"] == apply_config_commands()
    assert int(step["inputs"]["timeoutSeconds"]) == APPLY_TIMEOUT_SECONDS
    assert RECONFIGURE_ATTEMPTS * RECONFIGURE_DELAY_SECONDS < APPLY_TIMEOUT_SECONDS - 120
    # The production values the stand-ins replace, and nothing else differs.
    script = apply_config_commands()
    assert f"agent={AGENT_PATH}" in script and f"scontrol={SCONTROL}" in script
    assert f"done_marker={BOOTSTRAP_DONE}" in script
    changed = apply_config_commands(agent="a", scontrol="s", done_marker="d", failed_marker="f")
    differ = [i for i, (x, y) in enumerate(zip(script, changed, strict=True)) if x != y]
    assert differ == [1, 2, 3, 4]
    assert MANIFEST_HASH_PARAMETER in doc["parameters"]


def run_sync_nodes(node: Head, agent: list[int]) -> subprocess.CompletedProcess[str]:
    """The sync-nodes script (every node, on a push) with a stand-in agent, as Run Command runs
    it: one script, the manifest hash filled in."""
    from slurmstack.stack.sync_nodes import sync_nodes_commands

    lines = sync_nodes_commands(
        agent=node.command("slurmstack-node", agent),
        done_marker=str(node.root / BOOTSTRAP_DONE.lstrip("/")),
    )
    script = "\n".join(lines).replace("{{ " + MANIFEST_HASH_PARAMETER + " }}", HASH)
    env = {"PATH": os.environ["PATH"]}
    return subprocess.run(
        ["/bin/sh", "-c", script], capture_output=True, text=True, env=env, timeout=60
    )


def test_every_node_pulls_its_files_then_applies_its_people_once_booted(head: Head) -> None:
    # Still booting: nothing (its bootstrap runs identities with the newest manifest).
    result = run_sync_nodes(head, agent=[0])
    assert result.returncode == 0 and HASH in result.stdout and head.calls() == []
    head.mark(BOOTSTRAP_DONE, "done")
    result = run_sync_nodes(head, agent=[0])
    assert result.returncode == 0, result.stderr
    assert head.calls() == ["slurmstack-node sync-config", "slurmstack-node identities"]


def test_a_failed_sync_applies_no_people_and_fails(head: Head) -> None:
    head.mark(BOOTSTRAP_DONE, "done")
    result = run_sync_nodes(head, agent=[1])
    assert result.returncode == 1
    assert head.calls() == ["slurmstack-node sync-config"]
