"""Definition in, (spec, findings) out: parse, model validation, then the checks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurmstack.catalog import Catalog, load_catalog
from slurmstack.checks import run_checks
from slurmstack.findings import Finding, Level
from slurmstack.loader import Loaded, load_file, load_object
from slurmstack.spec import ClusterSpec


@dataclass
class Validated:
    spec: ClusterSpec | None
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return self.spec is not None and not any(f.level is Level.ERROR for f in self.findings)


def _checked(loaded: Loaded, catalog: Catalog | None) -> Validated:
    if loaded.spec is None:
        return Validated(None, loaded.findings)
    return Validated(
        loaded.spec, loaded.findings + run_checks(loaded.spec, catalog or load_catalog())
    )


def validate_file(path: Path, catalog: Catalog | None = None) -> Validated:
    return _checked(load_file(path), catalog)


def validate_object(
    data: Any, source: str = "slurmstack:cluster", catalog: Catalog | None = None
) -> Validated:
    return _checked(load_object(data, source), catalog)
