"""A team unit-tests its cluster the way Pulumi's testing guide shows: set_mocks, stack config,
the program, assertions in ``@pulumi.runtime.test``. The example the docs page shows
(examples/unit-tests/test_cluster.py) is run as a team runs it: copied into a project of its
own, with pytest, in a process of its own (set_mocks is for the whole process)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.stack import example

pytestmark = pytest.mark.stack

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_TEST = REPO / "examples" / "unit-tests" / "test_cluster.py"
GUIDE = REPO / "docs" / "testing-with-mocks.md"


def _run_as_a_team(
    stack_file: Path, project: Path, test_text: str | None = None
) -> subprocess.CompletedProcess[str]:
    (project / "test_cluster.py").write_text(test_text or EXAMPLE_TEST.read_text())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["STACK_FILE"] = str(stack_file)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_cluster.py"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _passed(done: subprocess.CompletedProcess[str]) -> int:
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    found = re.search(r"(\d+) passed", done.stdout)
    assert found, done.stdout
    return int(found.group(1))


def test_the_guides_pattern_runs_the_program_against_the_stack_file(tmp_path: Path) -> None:
    # Pulumi.dev.yaml: the p5 example as a stack (a Capacity Block pool and a spot pool).
    tests = len(re.findall(r"^def test_", EXAMPLE_TEST.read_text(), re.M))
    assert tests >= 5
    assert _passed(_run_as_a_team(REPO / "Pulumi.dev.yaml", tmp_path)) == tests


def test_the_same_tests_fail_when_the_cluster_breaks_them(tmp_path: Path) -> None:
    """The assertions can fail: the stack opens SSH to the world (g6e-inference-spot, an
    elastic spot pool) while the definition the test holds asks for no SSH."""
    definition = example("g6e-inference-spot")
    opened = dict(definition, network=dict(definition["network"], ssh_cidrs=["0.0.0.0/0"]))
    stack = tmp_path / "Pulumi.ci.yaml"
    config = {"aws:region": opened["region"], "slurmstack:cluster": opened}
    stack.write_text(yaml.safe_dump({"config": config}))
    shown = dict(definition, network=dict(definition["network"], ssh_cidrs=[]))
    text = EXAMPLE_TEST.read_text().replace(
        'DEFINITION = CONFIG["slurmstack:cluster"]', f"DEFINITION = {shown!r}"
    )
    assert text != EXAMPLE_TEST.read_text()
    done = _run_as_a_team(stack, tmp_path, text)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-4000:]
    assert re.search(r"\b1 failed, \d+ passed", done.stdout), done.stdout[-4000:]
    assert "test_nothing_is_open_to_the_internet_unless_the_definition_asks" in done.stdout


def test_the_docs_page_shows_the_example_whole() -> None:
    page = GUIDE.read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert EXAMPLE_TEST.read_text() in blocks
