"""A definition's text is read strictly: a key given twice is an error naming both lines
(YAML and JSON readers keep the last value silently), and a file has a size limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from slurmstack.definition_text import MAX_DEFINITION_BYTES
from slurmstack.loader import load_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "p5-training.yaml"


def _findings(path: Path) -> list[str]:
    loaded = load_file(path)
    assert loaded.spec is None
    return [f.line() for f in loaded.findings]


def test_a_second_name_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    """In the new-user trial a second `name:` further down silently renamed the cluster."""
    text = EXAMPLE.read_text()
    first = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("name:"))
    lines = [*text.splitlines(), "name: renamed-by-accident"]
    definition = tmp_path / "cluster.yaml"
    definition.write_text("\n".join(lines) + "\n")
    assert _findings(definition) == [
        f"{definition}:{len(lines)}:1: duplicate key 'name' at the top level: first on line "
        f"{first}, again on line {len(lines)}; a YAML or JSON reader keeps only the last "
        "value, silently, so remove one of them"
    ]


def test_every_duplicate_is_reported_with_the_mapping_it_is_in(tmp_path: Path) -> None:
    definition = tmp_path / "cluster.yaml"
    definition.write_text(
        "name: a\n"
        "pools:\n"
        "  - name: train\n"
        "    count: 2\n"
        "    capacity: {type: spot, type: on_demand}\n"
        "    count: 3\n"
    )
    found = _findings(definition)
    assert len(found) == 2, found
    assert found[0].startswith(f"{definition}:5:28: duplicate key 'type' under pools[0].capacity")
    assert "first on line 5, again on line 5" in found[0]
    assert found[1].startswith(f"{definition}:6:5: duplicate key 'count' under pools[0]")
    assert "first on line 4, again on line 6" in found[1]


def test_a_duplicate_in_json_names_both_lines(tmp_path: Path) -> None:
    definition = tmp_path / "cluster.json"
    body = json.dumps({"region": "us-east-1", "name": "a"}, indent=1)
    definition.write_text(body.replace('"name": "a"', '"name": "a",\n "name": "b"'))
    (line,) = _findings(definition)
    assert line.startswith(f"{definition}:4:2: duplicate key 'name' at the top level")
    assert "first on line 3, again on line 4" in line


def test_a_stack_file_is_read_as_strictly(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.prod.yaml"
    stack.write_text((ROOT / "Pulumi.dev.yaml").read_text() + "  aws:region: us-west-2\n")
    (line,) = _findings(stack)
    assert "duplicate key 'aws:region' under config" in line


def test_overriding_a_merged_mapping_is_no_duplicate(tmp_path: Path) -> None:
    """YAML's merge key: a pool takes shared settings and overrides one; that is meant."""
    text = EXAMPLE.read_text()
    text = "x-pool-defaults: &defaults {count: 2, efa: auto}\n" + text
    text = text.replace("    count: 16\n", "    <<: *defaults\n    count: 16\n", 1)
    definition = tmp_path / "cluster.yaml"
    definition.write_text(text)
    loaded = load_file(definition)
    # The models refuse the unknown top-level key, not a duplicate.
    assert [f.rule for f in loaded.findings] == ["unknown-key"], loaded.findings


def test_an_anchor_used_many_times_is_checked_once(tmp_path: Path) -> None:
    definition = tmp_path / "cluster.yaml"
    definition.write_text("a: &x {k: 1, k: 2}\nb: [*x, *x, *x]\nc: {<<: *x, j: 3}\n")
    found = _findings(definition)
    assert len(found) == 1 and "duplicate key 'k' under a" in found[0], found


def test_a_file_larger_than_the_limit_is_read_no_further(tmp_path: Path) -> None:
    big = tmp_path / "huge.yaml"
    with big.open("w") as out:
        out.write(EXAMPLE.read_text())
        out.write("# padding\n" * (MAX_DEFINITION_BYTES // 10))
    assert big.stat().st_size > MAX_DEFINITION_BYTES
    assert _findings(big) == [
        f"{big}: is larger than 1024 KiB, the most a definition file may hold (the examples "
        "are a few KB); is this the definition you meant?"
    ]
    just_under = tmp_path / "padded.yaml"
    just_under.write_text(big.read_text()[:MAX_DEFINITION_BYTES])
    assert load_file(just_under).spec is not None


def test_validate_refuses_an_endless_file_at_once() -> None:
    """/dev/zero never ends; the limit ends the read (main read it until memory ran out)."""
    done = subprocess.run(
        [sys.executable, "-m", "slurmstack.cli", "validate", "/dev/zero"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "infra")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[0].startswith("/dev/zero: is larger than 1024 KiB")
