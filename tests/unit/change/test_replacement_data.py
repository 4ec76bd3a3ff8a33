"""The provider's replacement data: for the locked provider versions, covering every field
of the definition's mutations, and naming inputs the locked SDK really has."""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
import tomllib
from pathlib import Path
from types import UnionType
from typing import Union, get_args, get_origin

import pytest

from slurmstack.change.replacement import load
from slurmstack.spec import ClusterSpec

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests"))
from change_mutations import MUTATIONS  # noqa: E402


def locked_version(package: str) -> str:
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    return next(p["version"] for p in lock["package"] if p["name"] == package)


def test_the_data_is_for_the_locked_providers() -> None:
    """A pulumi-aws (or pulumi-random) bump must come with refreshed data
    (tools/refresh_replacement_data.py)."""
    data = load()
    assert data.pulumi_aws == locked_version("pulumi-aws")
    assert data.pulumi_random == locked_version("pulumi-random")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _sdk_inputs(type_: str) -> set[str]:
    """The resource's input names in the installed SDK (its constructor's arguments)."""
    package, rest = type_.split(":", 1)
    module_path, cls = rest.split(":")
    module = module_path.split("/")[0]
    sdk = importlib.import_module(
        f"pulumi_{package}" if module == "index" else f"pulumi_{package}.{module}"
    )
    init = getattr(sdk, cls)._internal_init
    return set(inspect.signature(init).parameters) - {"__self__", "self", "resource_name", "opts"}


@pytest.mark.parametrize("type_", sorted(load().types))
def test_every_rule_names_an_input_the_locked_sdk_has(type_: str) -> None:
    rules = load().types[type_]
    assert rules.terraform and rules.source.get("path"), f"{type_}: no terraform name or source"
    known = _sdk_inputs(type_)
    for name in sorted(rules.known_inputs):
        assert _snake(name) in known, f"{type_}: {name} is no input of the locked SDK"


def _field_paths(model: type, prefix: str = "") -> list[str]:
    from pydantic import BaseModel

    def is_model(inner: object) -> bool:
        return isinstance(inner, type) and issubclass(inner, BaseModel)

    paths = []
    for name, info in model.model_fields.items():
        found, scalar_too = None, False
        for candidate in [info.annotation, *getattr(info.annotation, "__args__", ())]:
            inners = [candidate, *getattr(candidate, "__args__", ())]
            for inner in inners:
                if is_model(inner):
                    found = inner
            # A value that is a model or a plain value (image.parents: an AMI id or a
            # parameter version): both are changes of their own.
            if get_origin(candidate) in (Union, UnionType) and any(is_model(i) for i in inners):
                scalar_too |= any(
                    not is_model(i) and i is not type(None) for i in get_args(candidate)
                )
        if found is not None and name != "instance_facts":
            paths += _field_paths(found, f"{prefix}{name}.")
            if scalar_too:
                paths.append(f"{prefix}{name}")
        else:
            paths.append(f"{prefix}{name}")
    return paths


def test_every_field_of_the_definition_has_a_realistic_change() -> None:
    """A new field of the definition needs its change and class in tests/change_mutations.py."""
    fields = set(_field_paths(ClusterSpec))
    covered = {m.field for m in MUTATIONS}
    assert fields - covered == set(), "fields without a mutation"
    assert covered - fields == set(), "mutations of fields the definition no longer has"
    assert len(fields) > 90


def test_the_bridges_own_overrides_are_read_and_their_source_named() -> None:
    """pulumi-aws's own rules (resource_overrides.go and autonaming.go of a pulumi-aws v7
    commit, named in the provenance): no ForceNew of its own for these types, the mount
    target's DeleteBeforeReplace, and the auto-named inputs."""
    document = json.loads(
        (REPO / "infra" / "slurmstack" / "change" / "replacement.json").read_text()
    )
    bridge = document["provenance"]["pulumi-aws provider overrides"]
    assert bridge["files"]["provider/resource_overrides.go"].startswith("015d3438")
    assert "not determined" in bridge["release"]  # said so, not claimed to be 7.51.1
    data = load()
    deleted_first = {t for t, r in data.types.items() if r.delete_before_replace}
    assert deleted_first == {"aws:efs/mountTarget:MountTarget"}
    assert data.types["aws:rds/instance:Instance"].auto_named == ("identifier",)
    assert data.types["aws:s3/bucket:Bucket"].auto_named == ("bucket",)
    assert data.types["aws:efs/fileSystem:FileSystem"].auto_named == ("creationToken",)
    assert data.types["aws:autoscaling/group:Group"].auto_named == ("name",)
    for type_, rules in data.types.items():
        known = _sdk_inputs(type_)
        assert all(_snake(n) in known for n in rules.auto_named), type_
