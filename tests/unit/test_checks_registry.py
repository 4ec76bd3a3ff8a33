"""The rule registry: enough rules, every rule tested, every rule justified."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

from slurmstack.checks import RULES, rule_id
from support.checks import BASE, definition, findings

FAMILIES = [
    "names",
    "instances",
    "capacity",
    "elastic",
    "head",
    "network",
    "storage",
    "data",
    "mountpoint",
    "slurm",
    "accounting",
    "people",
    "nccl",
    "tags",
    "images",
    "health",
    "observability",
    "topology",
]


def _cases() -> list[object]:
    cases: list[object] = []
    for family in FAMILIES:
        cases += importlib.import_module(f"test_checks_{family}").CASES
    return cases


def test_at_least_forty_distinct_rules() -> None:
    ids = [rule_id(r) for r in RULES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 40


def test_every_rule_has_a_case() -> None:
    tested = {c.rule for c in _cases()}  # type: ignore[attr-defined]
    missing = {rule_id(r) for r in RULES} - tested
    assert not missing, f"rules without a test case: {sorted(missing)}"
    unknown = tested - {rule_id(r) for r in RULES}
    assert not unknown, f"cases for rules that do not exist: {sorted(unknown)}"


def test_case_ids_are_unique() -> None:
    ids = [c.id for c in _cases()]  # type: ignore[attr-defined]
    assert len(ids) == len(set(ids))


def test_every_rule_says_why() -> None:
    for func in RULES:
        source = inspect.getsource(inspect.getmodule(func))  # type: ignore[arg-type]
        head = source.split(f"def {func.__name__}(")[0].rstrip().splitlines()
        above = [line for line in head[-4:] if line.startswith("# why:")]
        assert above, f"{rule_id(func)} has no '# why:' comment above it"


def test_the_base_definition_has_no_finding() -> None:
    assert findings(definition()) == []
    assert BASE["pools"][0]["instance_type"] == "p5.48xlarge"


def test_rules_live_in_family_modules() -> None:
    modules = {Path(inspect.getfile(r)).stem for r in RULES}
    assert modules <= {*FAMILIES, "region"}
