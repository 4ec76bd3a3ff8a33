"""The JSON Schema (`slurmstack schema`) accepts every example and refuses what the models
refuse at the structural level."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from slurmstack.schema import definition_schema

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    """The schema exactly as `slurmstack schema` prints it."""
    proc = subprocess.run(
        [sys.executable, "-m", "slurmstack.cli", "schema"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "infra")},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    schema = json.loads(proc.stdout)
    assert schema == definition_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_schema_accepts_example(validator: jsonschema.Draft202012Validator, example: Path) -> None:
    errors = [e.message for e in validator.iter_errors(yaml.safe_load(example.read_text()))]
    assert errors == []


def _example() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "examples" / "p5-training.yaml").read_text())


def _mutated(path: list[Any], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(_example())
    node: Any = data
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (["colour"], "red"),  # unknown top-level key
        (["pools", 0, "colour"], "red"),  # unknown nested key
        (["pools", 0, "count"], "two"),
        (["pools", 0, "capacity", "type"], "reserved"),
        (["name"], "Upper"),
        (["pools"], []),
    ],
)
def test_schema_refuses(
    validator: jsonschema.Draft202012Validator, path: list[Any], value: Any
) -> None:
    assert list(validator.iter_errors(_mutated(path, value)))


def test_every_property_is_described() -> None:
    """A property carries a description, or refers to a model that does (pydantic drops a
    field description equal to the model's docstring)."""
    schema = definition_schema()
    defs = schema.get("$defs", {})
    missing = []
    for name, model in [("ClusterSpec", schema), *defs.items()]:
        for prop, body in model.get("properties", {}).items():
            ref = body.get("$ref", "").rsplit("/", 1)[-1]
            if "description" not in body and "description" not in defs.get(ref, {}):
                missing.append(f"{name}.{prop}")
    assert not missing
