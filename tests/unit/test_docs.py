"""The README's configuration reference and schema/cluster.schema.json come from the models."""

from __future__ import annotations

import json

from slurmstack import docs
from slurmstack.spec import ClusterSpec


def test_readme_reference_and_schema_file_are_current() -> None:
    assert docs.main(["--check"]) == 0, "run `uv run python -m slurmstack.docs`"


def test_every_definition_field_is_described() -> None:
    undescribed: list[str] = []

    def walk(model: type, prefix: str) -> None:
        for name, field in model.model_fields.items():  # type: ignore[attr-defined]
            if not field.description:
                undescribed.append(prefix + name)
            sub = docs._nested_model(field.annotation)
            if sub is not None:
                walk(sub, f"{prefix}{name}.")

    walk(ClusterSpec, "")
    assert undescribed == []


def test_reference_lists_every_top_level_key() -> None:
    text = docs.reference_markdown()
    for key in ClusterSpec.model_fields:
        assert f"| `{key}` |" in text


def test_checked_in_schema_is_the_models_schema() -> None:
    on_disk = json.loads(docs.SCHEMA_FILE.read_text())
    assert on_disk["properties"].keys() == ClusterSpec.model_json_schema()["properties"].keys()
