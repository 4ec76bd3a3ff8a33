"""Definition in, (spec, findings) out: parse, model validation, then the checks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurmstack.catalog import Catalog, load_catalog
from slurmstack.checks import run_checks
from slurmstack.findings import Finding, Level
from slurmstack.loader import STACK_CONFIG_KEY, Loaded, load_file, load_object
from slurmstack.spec import ClusterSpec


@dataclass
class Validated:
    spec: ClusterSpec | None
    findings: list[Finding]
    definition: Any = None  # the definition object, as read (see Loaded.definition)

    @property
    def ok(self) -> bool:
        return self.spec is not None and not any(f.level is Level.ERROR for f in self.findings)


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith((r + ".", r + "[")) for r in roots)


def _checked(loaded: Loaded, catalog: Catalog | None) -> Validated:
    if loaded.spec is None:
        if loaded.partial is None:
            return Validated(None, loaded.findings)
        # Report the rest of the definition too, leaving out what the refused keys (now at
        # their defaults) would make the checks say.
        extra = run_checks(loaded.partial, catalog or load_catalog())
        kept = [f for f in extra if not _under(f.path, loaded.dropped)]
        return Validated(None, loaded.findings + kept, loaded.definition)
    findings = loaded.findings + run_checks(loaded.spec, catalog or load_catalog())
    return Validated(loaded.spec, findings, loaded.definition)


def validate_file(path: Path, catalog: Catalog | None = None) -> Validated:
    return _checked(load_file(path), catalog)


def validate_object(
    data: Any, source: str = STACK_CONFIG_KEY, catalog: Catalog | None = None
) -> Validated:
    return _checked(load_object(data, source), catalog)
