"""An installed slurmstack plans without a checkout: the wheel carries the Pulumi program, the
templates, the catalog and the node agent.

The wheel is built once (``uv build``) and installed into fresh virtual environments in a
temporary directory, each with the locked dependencies (uv's cache makes that a copy, not a
download, once `uv sync` has run): once the way uv installs (no bytecode), once the way pip
does (`pip install` compiles every `.py` of the wheel, the job programs among the templates
included). `slurmstack plan` runs in each from another directory, with no path into the
checkout; its JSON must equal what the checkout's own CLI prints.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "p5-training.yaml"


def _uv() -> str:
    uv = shutil.which("uv")
    if uv is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but uv is not on PATH")
        pytest.skip("uv is not on PATH")
    return uv


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600):
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The built wheel and a requirements file of the locked dependencies."""
    uv = _uv()
    work = tmp_path_factory.mktemp("wheel")
    assert ROOT not in work.parents
    _run([uv, "build", "--wheel", "--out-dir", str(work / "dist"), str(ROOT)], cwd=work)
    wheels = list((work / "dist").glob("slurmstack-*.whl"))
    assert len(wheels) == 1, wheels
    requirements = work / "requirements.txt"
    exported = _run(
        [uv, "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project"], cwd=ROOT
    )
    requirements.write_text(exported.stdout)
    return wheels[0], requirements


@pytest.fixture(scope="module", params=["uv", "pip"])
def installed(
    request: pytest.FixtureRequest,
    wheel: tuple[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """The bin/ directory of a fresh venv with the wheel installed by uv or by pip."""
    uv, (built, requirements) = _uv(), wheel
    work = tmp_path_factory.mktemp(f"venv-{request.param}")
    venv = work / "venv"
    python = str(venv / "bin" / "python")
    if request.param == "uv":
        _run([uv, "venv", "--python", sys.executable, str(venv)], cwd=work)
        _run([uv, "pip", "install", "--python", python, "-r", str(requirements), str(built)], work)
        return venv / "bin"
    # pip's way: its own install of the wheel, which compiles bytecode for every module
    # (the dependencies come from uv's cache, as above: the same files, no download).
    _run([uv, "venv", "--seed", "--python", sys.executable, str(venv)], cwd=work)
    _run([uv, "pip", "install", "--python", python, "-r", str(requirements)], cwd=work)
    _run([python, "-m", "pip", "install", "--no-deps", "--no-index", str(built)], cwd=work)
    caches = list(venv.glob("lib/python*/site-packages/slurmstack/templates/**/__pycache__"))
    assert caches, "pip compiled no template's Python file: this install tests nothing new"
    return venv / "bin"


def _clean_env() -> dict[str, str]:
    """No way back into the checkout: no PYTHONPATH, no virtual environment of its own."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def test_the_installed_package_is_the_wheel(installed: Path, tmp_path: Path) -> None:
    probe = (
        "import slurmstack, slurmstack.program, slurmstack.render as r\n"
        "print(slurmstack.__file__)\nprint(r.templates_dir())\n"
        "print(sorted(p.name for p in r.templates_dir().iterdir()))\n"
    )
    out = _run([str(installed / "python"), "-c", probe], cwd=tmp_path, env=_clean_env())
    package, templates, families = out.stdout.splitlines()
    assert Path(package).is_relative_to(installed.parent), package
    assert Path(templates).is_relative_to(installed.parent), templates
    assert "slurm" in families and "cloud-init" in families


def test_plan_runs_from_an_installed_wheel(installed: Path, tmp_path: Path) -> None:
    """`slurmstack plan` from another directory, with the installed program; the same JSON as
    the checkout's CLI."""
    args = ["plan", str(EXAMPLE), "--json"]
    wheel = _run([str(installed / "slurmstack"), *args], cwd=tmp_path, env=_clean_env())
    checkout = _run([sys.executable, "-m", "slurmstack.cli", *args], cwd=ROOT)
    planned = json.loads(wheel.stdout)
    assert planned["summary"]["nodes"] > 0 and planned["resources"]
    assert planned == json.loads(checkout.stdout)


def test_plan_against_runs_from_an_installed_wheel(installed: Path, tmp_path: Path) -> None:
    """The replacement data ships in the wheel: `plan --against` compares without a checkout."""
    args = ["plan", str(EXAMPLE), "--against", str(EXAMPLE), "--json"]
    wheel = _run([str(installed / "slurmstack"), *args], cwd=tmp_path, env=_clean_env())
    changes = json.loads(wheel.stdout)["changes"]
    assert changes["changes"] == [] and changes["class"] == "none"
