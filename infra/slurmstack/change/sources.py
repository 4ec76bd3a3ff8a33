"""Where `plan --against OLD` gets what runs now: a saved `slurmstack plan --json` is read as
it is; a definition or a Pulumi.<stack>.yaml is validated and run offline, like FILE.

The one module of this package that runs the offline engine (and so loads Pulumi)."""

from __future__ import annotations

import json
from pathlib import Path

from slurmstack.change.releases import DeployedSlurm
from slurmstack.change.releases import from_document as releases_of_document
from slurmstack.change.releases import from_spec as releases_of_spec
from slurmstack.change.snapshot import NotASavedPlan, Snapshot, from_document, is_saved_plan
from slurmstack.findings import Level


class OldDeploymentError(Exception):
    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def _saved_plan(path: Path) -> object | None:
    """The parsed document when ``path`` is a saved plan (JSON with a resources list)."""
    if path.suffix.lower() != ".json":
        return None
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return document if is_saved_plan(document) else None


def old_snapshot(path: Path) -> Snapshot:
    saved = _saved_plan(path)
    if isinstance(saved, dict):
        try:
            return from_document(saved)
        except NotASavedPlan as exc:
            raise OldDeploymentError([f"{path}: {exc}"]) from None
    from slurmstack.change.snapshot import from_run
    from slurmstack.offline.engine import run_definition
    from slurmstack.validate import validate_file

    result = validate_file(path)
    if not result.ok or result.spec is None:
        errors = [f.line() for f in result.findings if f.level is Level.ERROR]
        raise OldDeploymentError([*errors, f"{path} (--against): invalid ({len(errors)} errors)"])
    run = run_definition(result.definition)
    if not run.ok:
        raise OldDeploymentError([f"{path} (--against): {line}" for line in run.error_lines()])
    return from_run(run, result.spec.name)


def old_releases(path: Path) -> DeployedSlurm | None:
    """The Slurm releases of the deployment at ``path`` (a saved plan's `slurm` section, or
    the definition's); None when a saved plan has none. Called after old_snapshot, which
    reported an unreadable or invalid ``path`` already."""
    saved = _saved_plan(path)
    if isinstance(saved, dict):
        return releases_of_document(saved)
    from slurmstack.validate import validate_file

    result = validate_file(path)
    return None if result.spec is None else releases_of_spec(result.spec)
