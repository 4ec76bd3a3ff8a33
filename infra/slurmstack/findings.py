"""Findings: what validation reports, each with a level and the path where it arose."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class Level(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Finding:
    """One problem (or caution) in a definition, located by its path (``pools[0].count``)."""

    path: str
    message: str
    level: Level = Level.ERROR
    rule: str = ""

    def line(self) -> str:
        prefix = "" if self.level is Level.ERROR else f"{self.level.value}: "
        return f"{self.path}: {prefix}{self.message}"


def format_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """Turn a location tuple such as ("pools", 0, "count") into "pools[0].count"."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += f".{part}"
        else:
            out = str(part)
    return out or "<definition>"


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.level is Level.ERROR]


def warnings(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.level is Level.WARNING]
