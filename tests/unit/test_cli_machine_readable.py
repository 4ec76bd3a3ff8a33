"""The CLI as scripts and new users meet it: `--version`, `-h`, `validate --json`, and
`plan --json` on an invalid definition (a JSON document of the findings on stdout, exit 1,
so a `jq` pipeline fails instead of reading nothing); flags read as flags in `--help`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/p5-training.yaml"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "infra")}
COMMANDS = (
    "validate",
    "schema",
    "render",
    "plan",
    "status",
    "logs",
    "catalog",
    "diagram",
    "ssh-config",
)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "slurmstack.cli", *args],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _invalid(tmp_path: Path) -> Path:
    bad = tmp_path / "bad.yaml"
    text = (ROOT / EXAMPLE).read_text().replace("default_partition: train", "default_partition: x")
    bad.write_text(text)
    return bad


def test_version_names_slurmstack_pulumi_and_python() -> None:
    done = cli("--version")
    assert done.returncode == 0, done.stderr
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    pattern = rf"slurmstack {re.escape(version)} \(pulumi \S+, pulumi-aws \S+, Python 3\.\S+\)"
    assert re.fullmatch(pattern, done.stdout.strip()), done.stdout


@pytest.mark.parametrize("command", [(), *((c,) for c in COMMANDS)], ids=["top", *COMMANDS])
def test_h_is_help_and_flags_read_as_flags(command: tuple[str, ...]) -> None:
    short, long = cli(*command, "-h"), cli(*command, "--help")
    assert short.returncode == long.returncode == 0, short.stderr
    assert short.stdout == long.stdout
    assert "<bool>" not in long.stdout
    if "--json" in long.stdout:
        assert re.search(r"^  --json {2,}\S", long.stdout, re.M), long.stdout


def test_the_command_list_says_each_command_whole() -> None:
    listed = cli("--help").stdout.split("Commands:")[1]
    assert "..." not in listed
    assert {line.split()[0] for line in listed.strip().splitlines()} == set(COMMANDS)


def test_validate_json_of_a_valid_definition() -> None:
    done = cli("validate", EXAMPLE, "--json")
    assert done.returncode == 0 and done.stderr == ""
    document = json.loads(done.stdout)
    assert document["valid"] is True and document["errors"] == 0
    assert document["summary"] == {
        "cluster": "llm-train",
        "region": "us-east-1",
        "nodes": 18,
        "pools": 2,
        "accelerators": 136,
        "accelerators_by_model": {"H100": 128, "L40S": 8},
        "head_instance_type": "m7i.4xlarge",
    }
    assert all(f["level"] == "warning" for f in document["findings"])


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_json_of_an_invalid_definition_is_its_findings_and_exit_1(
    command: str, tmp_path: Path
) -> None:
    bad = _invalid(tmp_path)
    done = cli(command, str(bad), "--json")
    assert done.returncode == 1
    document = json.loads(done.stdout)
    assert document["file"] == str(bad) and document["valid"] is False
    assert document["errors"] == 1
    (error,) = [f for f in document["findings"] if f["level"] == "error"]
    assert error["path"] == "slurm.default_partition"
    assert error["rule"] == "default-partition-unknown"
    # The lines people read stay on stderr.
    assert "slurm.default_partition: default partition 'x' is not a pool" in done.stderr
    assert done.stderr.splitlines()[-1] == f"{bad}: invalid (1 error)"


def test_an_unreadable_definition_is_json_too(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    document = json.loads(cli("validate", str(broken), "--json").stdout)
    assert document["valid"] is False
    assert document["findings"][0]["rule"] == "yaml-syntax"


def test_plan_refuses_an_invalid_definition_before_loading_pulumi(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        f"sys.argv = ['slurmstack', 'plan', {str(_invalid(tmp_path))!r}]\n"
        "from slurmstack.cli import app\n"
        "try:\n    app()\nexcept SystemExit as exc:\n    print('EXIT', exc.code)\n"
        "print('PULUMI', any(m.startswith('pulumi') for m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=ENV, capture_output=True, text=True
    )
    assert done.stdout.splitlines() == ["EXIT 1", "PULUMI False"], done.stdout + done.stderr
