"""The first command is quick, and so is every later one: nothing compiles every installed
module up front (uv's compile-bytecode did, 7,555 files, and re-checked them on every
`uv run`, printing a line each time), and the command keeps the bytecode of the modules it
loads also where Python writes none by itself (PYTHONDONTWRITEBYTECODE).
benchmarks/bench_first_run.py measures the fresh clone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/p5-training.yaml"


def _environment(**extra: str) -> dict[str, str]:
    drop = {"PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "UV_COMPILE_BYTECODE"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def test_uv_run_prints_no_bytecode_line() -> None:
    uv = shutil.which("uv")
    if uv is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but uv is not on PATH")
        pytest.skip("uv is not on PATH")
    env = {k: v for k, v in _environment().items() if k != "VIRTUAL_ENV"}
    done = subprocess.run(
        [uv, "run", "--frozen", "python", "-c", "pass"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "Bytecode compiled" not in done.stderr


def _bytecode(prefix: Path) -> set[Path]:
    return set(prefix.rglob("*.pyc"))


def test_the_command_keeps_its_bytecode_where_python_writes_none(tmp_path: Path) -> None:
    """Under PYTHONDONTWRITEBYTECODE the command still writes the bytecode of what it
    imports (collected here under PYTHONPYCACHEPREFIX, to see it), and a second run
    compiles nothing more."""
    prefix = tmp_path / "pycache"
    env = _environment(
        PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=str(prefix), PYTHONPATH=str(ROOT / "infra")
    )
    command = [sys.executable, "-m", "slurmstack.cli", "validate", EXAMPLE]
    first = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, timeout=300)
    assert first.returncode == 0, first.stderr
    written = _bytecode(prefix)
    names = {path.name.split(".")[0] for path in written}
    assert {"main", "fields", "loader", "spec"} <= names  # pydantic's, typer's, ours
    assert len(written) > 100
    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, timeout=300)
    assert again.returncode == 0
    assert _bytecode(prefix) == written
