"""The README's first command on a fresh clone: how long the first and the later runs take.

For each mode, clones the repository's HEAD into a temporary directory and runs
`uv run slurmstack plan examples/p5-training.yaml` there --runs times (the first run also
creates .venv; uv's cache makes that a copy, not a download, once `uv sync` has run here).
Modes, in one process so the machine's load is shared:
  - writes bytecode: Python as it comes (bytecode written on import);
  - PYTHONDONTWRITEBYTECODE=1: Python writes none by itself (containers, CI);
  - uv compile-bytecode: UV_COMPILE_BYTECODE=1, what pyproject.toml set before (every
    installed module compiled at install, and re-checked on every `uv run`).
Prints seconds per run and whether uv printed a "Bytecode compiled" line.

    uv run python benchmarks/bench_first_run.py [--runs 3] [--modes writes,dont-write,uv-compile]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMAND = ["uv", "run", "slurmstack", "plan", "examples/p5-training.yaml"]
MODES = {
    "writes": {},
    "dont-write": {"PYTHONDONTWRITEBYTECODE": "1"},
    "uv-compile": {"UV_COMPILE_BYTECODE": "1"},
}


def _environment(extra: dict[str, str]) -> dict[str, str]:
    drop = {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "UV_COMPILE_BYTECODE"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def _mode(name: str, runs: int, work: Path) -> None:
    clone = work / name
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    env = _environment(MODES[name])
    for run in range(1, runs + 1):
        started = time.monotonic()
        done = subprocess.run(COMMAND, cwd=clone, env=env, capture_output=True, text=True)
        seconds = time.monotonic() - started
        assert done.returncode == 0, done.stderr
        compiled = [line for line in done.stderr.splitlines() if "Bytecode compiled" in line]
        note = f"  ({compiled[0].strip()})" if compiled else ""
        print(f"{name:>10} run {run}: {seconds:6.1f} s{note}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    if shutil.which("uv") is None:
        raise SystemExit("uv is not on PATH")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="first-run-") as work:
        for name in args.modes.split(","):
            _mode(name, args.runs, Path(work))


if __name__ == "__main__":
    main()
