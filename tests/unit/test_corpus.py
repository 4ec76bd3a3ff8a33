"""The corpus of invalid definitions (tests/corpus/invalid): every file is rejected by the CLI
with exit code 1, no traceback, and every path its header names ('# expect: <path>', or the
lines of a '<file>.expect' sidecar for files that cannot carry a comment)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from slurmstack.cli import app

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus" / "invalid"
FILES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".yaml", ".yml", ".json"))


def expectations(path: Path) -> list[str]:
    sidecar = path.with_name(path.name + ".expect")
    if sidecar.exists():
        lines = sidecar.read_text().splitlines()
        prefix = "expect:"
    else:
        lines = path.read_text(encoding="utf-8").splitlines()
        prefix = "# expect:"
    found = [line[len(prefix) :].strip() for line in lines if line.startswith(prefix)]
    return [e.replace("{file}", str(path.relative_to(ROOT))) for e in found]


def test_corpus_is_large_and_every_file_names_a_path() -> None:
    assert len(FILES) >= 60
    for path in FILES:
        assert expectations(path), f"{path.name} has no '# expect:' line"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_rejected_with_every_expected_path(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, ["validate", str(path.relative_to(ROOT))])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    err = result.stderr
    assert "Traceback" not in err + result.stdout
    lines = err.splitlines()
    for expected in expectations(path):
        assert any(line.startswith(expected) for line in lines), f"{expected!r} not in:\n{err}"
    assert lines[-1].endswith("error)") or lines[-1].endswith("errors)"), lines[-1]


# The same through a real process for one file of each kind (in-process runs cannot show a
# traceback printed by the interpreter itself).
SAMPLE = [
    "malformed-tab.yaml",
    "empty.yaml",
    "top-level-list.yaml",
    "not-utf8.yaml",
    "deep-nesting.yaml",
    "huge-number.json",
    "unknown-pool-key.yaml",
    "many-rule-errors.yaml",
]


@pytest.mark.parametrize("name", SAMPLE)
def test_rejected_by_a_real_process(name: str) -> None:
    path = CORPUS / name
    env = {**os.environ, "PYTHONPATH": str(ROOT / "infra")}
    proc = subprocess.run(
        [sys.executable, "-m", "slurmstack.cli", "validate", str(path.relative_to(ROOT))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for expected in expectations(path):
        assert expected in proc.stderr
