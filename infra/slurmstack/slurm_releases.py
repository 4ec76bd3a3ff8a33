"""Slurm releases: the version of record, the pinned sources a definition may choose, SchedMD's
support window per release line, and the order of a rolling upgrade. Pure data and functions
over image_pins.json's ``slurm`` object (its sources and their provenance are there); the spec
takes its default from here, checks and plan take the rest.

A Slurm version is ``YY.MM.P``; its release line is ``YY.MM`` (SchedMD: "major release").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PINS_FILE = Path(__file__).resolve().parent / "image_pins.json"
VERSION_PATTERN = r"^[0-9]{2}\.[0-9]{2}\.[0-9]+$"
_VERSION = re.compile(VERSION_PATTERN)


@cache
def _slurm_pins() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PINS_FILE.read_text())["slurm"]
    return data


@dataclass(frozen=True)
class SlurmSource:
    """A pinned source tarball: SchedMD's tag archive, checked against its sha256."""

    version: str
    tag: str
    url: str
    sha256: str
    size: int
    provenance: str


@dataclass(frozen=True)
class ReleaseLine:
    """One release line as SchedMD's upgrade guide lists it."""

    line: str  # "26.05"
    end_of_support: str  # "YYYY-MM"
    compatible_prior: tuple[str, ...]  # lines whose state, database and RPCs it accepts


def version_of_record() -> str:
    """The Slurm the images build by default (image_pins.json, slurm.version)."""
    return str(_slurm_pins()["version"])


DEFAULT_VERSION = version_of_record()


def is_version(text: str) -> bool:
    return bool(_VERSION.match(text))


def line_of(version: str) -> str:
    """``26.05.5`` -> ``26.05``."""
    return ".".join(version.split(".")[:2])


def sources() -> dict[str, SlurmSource]:
    return {
        version: SlurmSource(
            version=version,
            tag=s["tag"],
            url=s["url"],
            sha256=s["sha256"],
            size=int(s["size"]),
            provenance=s["source"],
        )
        for version, s in _slurm_pins()["sources"].items()
    }


def source(version: str) -> SlurmSource | None:
    return sources().get(version)


def lines() -> dict[str, ReleaseLine]:
    table = _slurm_pins()["releases"]["lines"]
    return {
        line: ReleaseLine(line, row["end_of_support"], tuple(row["compatible_prior"]))
        for line, row in table.items()
    }


def as_of() -> str:
    """The month the support table was read (no clock: plans are pure)."""
    return str(_slurm_pins()["releases"]["as_of"])


def supported(line: str) -> bool:
    """Whether SchedMD still supports ``line`` as of ``as_of()``."""
    row = lines().get(line)
    return row is not None and row.end_of_support >= as_of()


def version_key(version: str) -> tuple[int, ...]:
    """``24.11.5`` -> ``(24, 11, 5)``: releases in order."""
    return tuple(int(part) for part in version.split("."))


def controller_accepts(controller: str, node: str) -> bool:
    """Whether a slurmctld of release ``controller`` takes slurmd of release ``node``: the same
    line or one its upgrade guide lists as compatible, never a newer release (SchedMD:
    slurmdbd >= slurmctld >= slurmd and commands, "Upgrade Procedure")."""
    if version_key(node) > version_key(controller):
        return False
    if line_of(node) == line_of(controller):
        return True
    row = lines().get(line_of(controller))
    return row is not None and line_of(node) in row.compatible_prior


def _key(line: str) -> tuple[int, int]:
    year, month = line.split(".")
    return int(year), int(month)


def upgrade_hops(old: str, new: str) -> tuple[str, ...] | None:
    """The release lines an upgrade from version ``old`` to ``new`` runs through, ``new``'s
    last: each accepts the one before it (SchedMD: "upgrades from incompatible prior versions
    in steps"). () for the same line (a patch release, one hop of no line change); None when
    no path is known (a downgrade, or a line the table lacks)."""
    start, target = line_of(old), line_of(new)
    if start == target:
        return ()
    table = lines()
    if target not in table or _key(target) < _key(start):
        return None
    hops: list[str] = []
    current = start
    while current != target:
        if current in table[target].compatible_prior:
            hops.append(target)
            break
        # The newest line that accepts the current one and is not past the target, a line
        # with a pinned source first (a cluster can go there with slurmstack's own images).
        candidates = [
            line
            for line, row in table.items()
            if current in row.compatible_prior and _key(line) < _key(target)
        ]
        if not candidates:
            return None
        pinned = {line_of(version) for version in sources()}
        current = max(candidates, key=lambda line: (line in pinned, _key(line)))
        hops.append(current)
    return tuple(hops)


# SchedMD's upgrade procedure (upgrades.shtml, "Upgrade Procedure"): the database daemon first,
# then the controller, then the node daemons, then login nodes and clients; each newer daemon
# accepts the older ones still running. Where each runs in a slurmstack cluster.
@dataclass(frozen=True)
class UpgradeStep:
    daemon: str
    where: str
    how: str
    paused: str


def upgrade_steps(accounting: bool, login_nodes: bool = False) -> tuple[UpgradeStep, ...]:
    steps = []
    if accounting:
        steps.append(
            UpgradeStep(
                "slurmdbd",
                "head node",
                "the head is replaced by one booting the new release's image (the AMI parameter "
                "of that release is new; its address, state volume and database are kept); its "
                "boot starts slurmdbd first, which converts the database once",
                "accounting records queue in slurmctld until slurmdbd is back",
            )
        )
    steps.append(
        UpgradeStep(
            "slurmctld",
            "head node",
            "started after slurmdbd on the same boot; reads the saved state of the older release",
            "scheduling: no job starts until slurmctld is back; running jobs keep running",
        )
    )
    steps.append(
        UpgradeStep(
            "slurmd",
            "every pool",
            "after the head: each pool's launch template waits for the head's replacement, then "
            "its instance refresh replaces its nodes with the new image, drained batch by batch "
            "(running jobs finish first); older slurmd keep working with the newer slurmctld",
            "the nodes of the batch being drained take no new jobs",
        )
    )
    if login_nodes:
        steps.append(
            UpgradeStep(
                "sackd and the commands",
                "login pools",
                "after the head: each login pool's launch template waits for the head's "
                "replacement, then its instance refresh replaces its nodes with the new image",
                "a replaced login node's sessions end; the others keep theirs",
            )
        )
    return tuple(steps)
