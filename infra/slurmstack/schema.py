"""The definition's JSON Schema, for editors (yaml-language-server) and the docs."""

from __future__ import annotations

from typing import Any

from slurmstack.spec import ClusterSpec


def definition_schema() -> dict[str, Any]:
    schema = ClusterSpec.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "slurmstack cluster definition"
    return schema
