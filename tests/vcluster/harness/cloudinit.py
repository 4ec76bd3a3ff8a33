"""A node's user data, run the way cloud-init runs it: write_files first, then runcmd as one
shell script (cloud-init's "scripts-user" stage: a string entry is a line as written, a list
entry is its words shell-quoted), stopping at the first failure because the document starts
with `set -eu`. Every step runs as written, through the bootstrap runner as the document says
(`slurmstack-bootstrap check|install|run|done`); only the commands named in
standins.REPLACED_STEPS are replaced, inside the runner's `run`, by their stand-in, and the image
contract check runs without the items this machine lacks (stand-in "image-contract")."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

import yaml

from slurmstack.contract import BOOTSTRAP_PATH

from .standins import ABSENT_FROM_THIS_MACHINE, CONTRACT_STEP, REPLACED_STEPS, STEP

SCRIPT_PATH = "/var/lib/cloud/instance/scripts/runcmd"
# cloud-init's record of the instance it runs on (the bootstrap reads it to mark a failed
# worker Unhealthy).
INSTANCE_ID_PATH = "/var/lib/cloud/data/instance-id"
RUNNER = BOOTSTRAP_PATH.rsplit("/", 1)[-1]
RUNNER_RUN = (RUNNER, "run")


def replaced_step(entry: tuple[str, ...]) -> str | None:
    """The stand-in step for a runcmd entry `slurmstack-bootstrap run <command>` whose command
    is in REPLACED_STEPS."""
    if entry[: len(RUNNER_RUN)] != RUNNER_RUN:
        return None
    return REPLACED_STEPS.get(entry[len(RUNNER_RUN) :])


@dataclass(frozen=True)
class FileToWrite:
    path: str
    content: str
    permissions: str
    owner: str


@dataclass(frozen=True)
class UserData:
    files: tuple[FileToWrite, ...]
    runcmd: tuple[str | tuple[str, ...], ...]

    def script(self, step_dirs: dict[str, str], absent: frozenset[str] = frozenset()) -> str:
        """The runcmd script this node runs: the runner of each replaced step runs its
        stand-in, with the directory ``step_dirs`` gives for it; the contract check leaves out
        what this machine lacks and ``absent`` (what the nodes' Slurm lacks)."""
        lines = ["#!/bin/sh"]
        for entry in self.runcmd:
            if isinstance(entry, str):
                lines.append(entry)
                continue
            step = replaced_step(entry)
            if step:
                entry = (*RUNNER_RUN, "/usr/bin/python3", STEP, step, step_dirs[step])
            elif entry[:2] == CONTRACT_STEP:
                entry = tuple(w for w in entry if w not in ABSENT_FROM_THIS_MACHINE | absent)
            lines.append(" ".join(shlex.quote(w) for w in entry))
        return "\n".join(lines) + "\n"

    def replaced(self) -> list[str]:
        """The stand-in steps this document runs."""
        return [s for e in self.runcmd if isinstance(e, tuple) and (s := replaced_step(e))]


def parse(text: str) -> UserData:
    if not text.startswith("#cloud-config"):
        raise ValueError("user data is not a #cloud-config document")
    doc: dict[str, Any] = yaml.safe_load(text)
    files = tuple(
        FileToWrite(
            path=f["path"],
            content=f.get("content", ""),
            permissions=str(f.get("permissions", "0644")),
            owner=f.get("owner", "root:root"),
        )
        for f in doc.get("write_files", [])
    )
    runcmd = tuple(
        entry if isinstance(entry, str) else tuple(str(w) for w in entry)
        for entry in doc.get("runcmd", [])
    )
    return UserData(files=files, runcmd=runcmd)
