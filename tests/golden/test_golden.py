"""Golden files: the full render output of every example, as `slurmstack render` writes it.

Refreshed only on purpose: `SLURMSTACK_UPDATE_GOLDEN=1 pytest tests/golden` (or
`python tests/golden/refresh.py`), then review the diff like any other change.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers_examples import EXAMPLE_IDS, example_plan
from slurmstack.render import render_cluster

GOLDEN = Path(__file__).resolve().parent / "files"
UPDATE = os.environ.get("SLURMSTACK_UPDATE_GOLDEN") == "1"


def write_golden(example: str) -> None:
    root = GOLDEN / example
    for old in sorted(root.rglob("*"), reverse=True) if root.exists() else []:
        old.unlink() if old.is_file() else old.rmdir()
    for rel, text in render_cluster(example_plan(example)).items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_render_matches_golden(example: str) -> None:
    if UPDATE:
        write_golden(example)
    root = GOLDEN / example
    assert root.is_dir(), f"no golden files for {example}: run with SLURMSTACK_UPDATE_GOLDEN=1"
    rendered = render_cluster(example_plan(example))
    on_disk = {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}
    assert sorted(on_disk) == sorted(rendered), "files added or removed"
    for rel, text in rendered.items():
        assert on_disk[rel] == text, f"{example}/{rel} differs from its golden file"
