"""Example definitions -> plans, shared by the render, golden, slurm and cloud-init tests."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from slurmstack.loader import load_file
from slurmstack.plan import ClusterPlan, build_plan

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
EXAMPLE_IDS = [p.stem for p in EXAMPLES]


@cache
def example_plan(stem: str) -> ClusterPlan:
    loaded = load_file(REPO / "examples" / f"{stem}.yaml")
    assert loaded.spec is not None, loaded.findings
    return build_plan(loaded.spec)
