"""Every bundled example validates without errors and plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack.findings import Level
from slurmstack.plan import build_plan
from slurmstack.validate import validate_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def test_the_five_examples_are_there() -> None:
    assert {p.stem for p in EXAMPLES} >= {
        "p5-training",
        "p4d-odcr",
        "g6e-inference-spot",
        "trainium",
        "cpu-hpc",
    }


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_is_valid_and_plans(example: Path) -> None:
    result = validate_file(example)
    errors = [f.line() for f in result.findings if f.level is Level.ERROR]
    assert result.ok, errors
    assert result.spec is not None
    plan = build_plan(result.spec)
    assert plan.max_node_count == sum(p.max_count or p.count for p in result.spec.pools)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_warnings_are_known_rules(example: Path) -> None:
    """Warnings on examples are deliberate trade-offs; none may come from an unknown rule."""
    from slurmstack.checks import RULES, rule_id

    ids = {rule_id(r) for r in RULES}
    for finding in validate_file(example).findings:
        assert finding.rule in ids
