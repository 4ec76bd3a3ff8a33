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


def findings_document(source: str, findings: list[Finding], **extra: Any) -> dict[str, Any]:
    """The findings of one definition as a JSON-ready document (``validate --json``, and
    ``plan --json`` when the definition is invalid): valid when no finding is an error."""
    return {
        "file": source,
        "valid": not errors(findings),
        "errors": len(errors(findings)),
        "warnings": len(warnings(findings)),
        "findings": [
            {"path": f.path, "level": f.level.value, "message": f.message, "rule": f.rule}
            for f in findings
        ],
        **extra,
    }
