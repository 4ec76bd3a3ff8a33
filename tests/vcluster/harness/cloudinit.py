"""A node's user data, run the way cloud-init runs it: write_files first, then runcmd as one
shell script (cloud-init's "scripts-user" stage: a string entry is a line as written, a list
entry is its words shell-quoted), stopping at the first failure because the document starts
with `set -eu`. Steps named in standins.REPLACED_STEPS run their stand-in instead; the image
contract check runs without the items this machine lacks (stand-in "image-contract")."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

import yaml

from .standins import ABSENT_FROM_THIS_MACHINE, CONTRACT_STEP, REPLACED_STEPS, STEP

SCRIPT_PATH = "/var/lib/cloud/instance/scripts/runcmd"


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
    packages: tuple[str, ...]

    def script(self, step_dirs: dict[str, str]) -> str:
        """The runcmd script this node runs: each replaced step calls its stand-in with the
        directory ``step_dirs`` gives for it."""
        lines = ["#!/bin/sh"]
        for entry in self.runcmd:
            if isinstance(entry, str):
                lines.append(entry)
                continue
            step = REPLACED_STEPS.get(entry)
            words = ("/usr/bin/python3", STEP, step, step_dirs[step]) if step else entry
            if entry[:2] == CONTRACT_STEP:
                words = tuple(w for w in entry if w not in ABSENT_FROM_THIS_MACHINE)
            lines.append(" ".join(shlex.quote(w) for w in words))
        return "\n".join(lines) + "\n"

    def replaced(self) -> list[tuple[str, ...]]:
        return [e for e in self.runcmd if isinstance(e, tuple) and e in REPLACED_STEPS]


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
    return UserData(files=files, runcmd=runcmd, packages=tuple(doc.get("packages", [])))
