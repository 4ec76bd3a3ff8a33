"""A definition with a refused key still gets the checks' findings on everything else."""

from __future__ import annotations

from typing import Any

from slurmstack.validate import validate_object


def _definition(**pool: Any) -> dict[str, Any]:
    base = {"name": "train", "instance_type": "p5.48xlarg", "count": 2}
    base.update(pool)
    return {
        "name": "demo",
        "region": "us-east-1",
        "availability_zone": "us-east-1a",
        "head_node": {"instance_type": "m7i.4xlarge", "colour": "red"},
        "pools": [base],
    }


def test_model_errors_and_check_findings_come_together() -> None:
    result = validate_object(_definition(efa="maybe"))
    assert not result.ok and result.spec is None
    paths = {f.path for f in result.findings}
    # Refused by the models ...
    assert {"head_node.colour", "pools[0].efa"} <= paths
    # ... and found by the checks on the rest, in the same run.
    assert "pools[0].instance_type" in paths


def test_checks_say_nothing_about_a_refused_key_they_saw_at_its_default() -> None:
    # efa refused -> default auto; on a type without EFA the checks must not report efa.
    result = validate_object(
        _definition(instance_type="m7i.4xlarge", efa="maybe", local_scratch="/usr/x")
    )
    efa = [f for f in result.findings if f.path == "pools[0].efa"]
    assert len(efa) == 1 and "maybe" in efa[0].message
    assert any(f.path == "pools[0].local_scratch" for f in result.findings)


def test_a_refused_required_key_stops_before_the_checks() -> None:
    result = validate_object(_definition(count="many"))
    paths = {f.path for f in result.findings}
    assert "pools[0].count" in paths
    assert "pools[0].instance_type" not in paths  # no checks: count has no default
