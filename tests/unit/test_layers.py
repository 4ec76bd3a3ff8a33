"""The layers hold: import-linter's contracts (pyproject.toml) pass, no module imports another's
private name, and the pure layers load without Pulumi at run time too."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "infra" / "slurmstack"


def test_import_contracts_are_kept() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint is not None, "import-linter is a dev dependency (uv sync)"
    done = subprocess.run(
        [lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_no_module_imports_a_private_name_of_another() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("slurmstack"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private:
                    offenders.append(f"{path.relative_to(PACKAGE)}: {node.module} {private}")
    assert offenders == [], "\n".join(offenders)


def test_the_contract_is_imported_through_its_door_and_re_exported_nowhere() -> None:
    """Every contract name comes from ``slurmstack.contract`` itself: no module outside the
    package imports one of its modules, and no other module passes a contract name on (as an
    import others take from it, or in its ``__all__``)."""
    import importlib

    from slurmstack import contract

    offenders = []
    sources = [
        *PACKAGE.rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "benchmarks").rglob("*.py"),
    ]
    for path in sorted(p for p in sources if "golden/files" not in p.as_posix()):
        inside = path.is_relative_to(PACKAGE / "contract")
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(
                "slurmstack"
            ):
                continue
            module = node.module or ""
            if module.startswith("slurmstack.contract.") and not inside:
                offenders.append(f"{path.relative_to(ROOT)}: imports {module}, not the door")
            elif module != "slurmstack.contract" and not module.startswith("slurmstack.contract."):
                source = importlib.import_module(module)
                for alias in node.names:
                    value = getattr(source, alias.name, None)
                    if alias.name in contract.__all__ and value is getattr(contract, alias.name):
                        offenders.append(f"{path.relative_to(ROOT)}: {alias.name} from {module}")
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(PACKAGE / "contract"):
            continue
        dotted = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        module = importlib.import_module(dotted.removesuffix(".__init__"))
        for name in getattr(module, "__all__", ()):
            if name in contract.__all__ and getattr(module, name) is getattr(contract, name):
                offenders.append(f"{dotted}.__all__ re-exports {name}")
    assert offenders == [], "\n".join(offenders)


def test_pure_layers_load_without_pulumi() -> None:
    """What `validate`, `render` and the report's pure parts import, in a fresh interpreter."""
    modules = [
        "slurmstack.cli",
        "slurmstack.validate",
        "slurmstack.plan",
        "slurmstack.render",
        "slurmstack.report.plan_report",
        "slurmstack.report.diagram",
        "slurmstack.offline",
        "slurmstack.stack",
        "slurmstack.stack.common",
        "slurmstack.stack.policies",
        "slurmstack.stack.user_data",
        "slurmstack.node.cli",
    ]
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi')))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "infra")}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# Modules of the control plane that are longer than a module should be, each a split waiting to
# happen; a module not named here stays at most MODULE_LINES long (the agent's and the
# contract's without exception: tests/unit/node/test_tree.py, tests/unit/test_contract.py).
MODULE_LINES = 300
LONGER_TODAY = frozenset(
    {
        "change/effects.py", "checks/accounting.py", "checks/instances.py", "checks/network.py",
        "checks/slurm.py", "checks/storage.py", "cli.py", "loader.py", "offline/standins.py",
        "plan/images.py", "plan/pools.py", "spec.py", "stack/image.py", "stack/policies.py",
        "stack/worker_pool.py",
    }
)  # fmt: skip


def test_every_shipped_module_is_small_or_named_as_a_split_to_make() -> None:
    sizes = {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    too_long = {p: n for p, n in sizes.items() if n > MODULE_LINES and p not in LONGER_TODAY}
    assert too_long == {}, "split it into modules of one job each"
    for path in LONGER_TODAY:
        assert not path.startswith(("node/", "contract/")), path
