"""`slurmstack validate` and `slurmstack schema` through a real process: exit codes, output
lines, and that validate never imports pulumi."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "infra")}


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "slurmstack.cli", *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_validate_accepts_every_example_with_a_summary(example: Path) -> None:
    proc = cli("validate", str(example))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    summary = proc.stdout.splitlines()[-1]
    assert summary.startswith("valid: ")
    assert " nodes in " in summary and "head node" in summary
    for line in proc.stdout.splitlines()[:-1]:
        assert ": warning: " in line  # anything before the summary is a warning


def test_summary_counts_nodes_and_gpus_by_model() -> None:
    proc = cli("validate", "examples/p5-training.yaml")
    assert "llm-train: 18 nodes in 2 pools, 136 accelerators (128 H100, 8 L40S)" in proc.stdout


def test_invalid_definition_prints_every_finding_and_exits_1(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "p5-training.yaml").read_text()
    text = text.replace("default_partition: train", "default_partition: trian")
    text = text.replace("p5.48xlarge", "p5.48xlarg")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    proc = cli("validate", str(bad))
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert "slurm.default_partition: default partition 'trian' is not a pool" in proc.stderr
    assert any(
        line.startswith("pools[0].instance_type: unknown instance type 'p5.48xlarg'; did you mean")
        for line in lines
    )
    assert lines[-1] == f"{bad}: invalid (2 errors)"
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("validate", "does-not-exist.yaml"),
        ("validate", "examples"),  # a directory
        ("validate",),
        ("validate", "examples/p5-training.yaml", "--frobnicate"),
        ("frobnicate",),
    ],
    ids=["missing-file", "directory", "no-file", "unknown-option", "unknown-command"],
)
def test_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    proc = cli(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr


def test_schema_is_json_schema() -> None:
    proc = cli("schema")
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    assert schema["title"] == "slurmstack cluster definition"
    assert schema["additionalProperties"] is False


IMPORT_PROBE = """
import sys
sys.argv = ["slurmstack", "validate", sys.argv[1]]
from slurmstack.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print("EXIT", code)
print("PULUMI", sorted(m for m in sys.modules if m.split(".")[0] in ("pulumi", "pulumi_aws")))
"""


@pytest.mark.parametrize(
    "example", ["examples/p5-training.yaml", "tests/corpus/invalid/pools-empty.yaml"]
)
def test_validate_does_not_import_pulumi(example: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE, example],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "PULUMI []" in proc.stdout, proc.stdout + proc.stderr
    assert "EXIT" in proc.stdout


def test_import_time_shows_no_pulumi_module() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "slurmstack.cli",
            "validate",
            "examples/p5-training.yaml",
        ],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0
    imported = [
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    ]
    assert "slurmstack.validate" in imported
    assert not [m for m in imported if m.split(".")[0] in ("pulumi", "pulumi_aws")]
