"""Diagrams name every pool with its type, count and fabric, and every storage tier."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from slurmstack.loader import load_file
from slurmstack.plan import build_plan
from slurmstack.report.diagram import dot, mermaid

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


def _plan(path: Path):  # type: ignore[no-untyped-def]
    loaded = load_file(path)
    assert loaded.spec is not None
    return build_plan(loaded.spec)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_mermaid_names_every_pool_and_tier(example: Path) -> None:
    plan = _plan(example)
    text = mermaid(plan)
    assert text.startswith("flowchart LR\n")
    for pool in plan.pools:
        nodes = f"{pool.count}-{pool.max_count}" if pool.elastic else str(pool.count)
        assert f"{nodes} × {pool.instance_type}" in text
        assert ("EFA × " if pool.efa else "no EFA") in text
    if plan.lustre:
        assert f"FSx for Lustre {plan.lustre.spec.mount}" in text
    if plan.spec.storage.home:
        assert "EFS /home" in text
    # Every edge names ids that are declared as nodes.
    declared = set(re.findall(r"^\s+(\w+)\[", text, re.M))
    for src, dst in re.findall(r"^\s+(\w+) <?-->\|[^|]*\| (\w+)$", text, re.M):
        assert src in declared and dst in declared, (src, dst)
    # subgraph/end balance
    assert text.count("subgraph ") == text.count("\n  end") + text.count("\n    end")


def test_p5_diagram_shows_capacity_block_without_placement_group() -> None:
    text = mermaid(_plan(EXAMPLES[[p.stem for p in EXAMPLES].index("p5-training")]))
    line = next(line for line in text.splitlines() if "pool_train[" in line)
    assert "128 × H100" in line
    assert "EFA × 32" in line
    assert "capacity block" in line
    assert "placement group" not in line


def test_elastic_pools_are_drawn_with_their_range() -> None:
    """g6e-inference-spot: l40s keeps 1 node and grows to 8, l4 keeps none and grows to 4;
    main drew l4 as '0 x g6.12xlarge' (with a times sign), a pool that never runs."""
    plan = _plan(EXAMPLES[[p.stem for p in EXAMPLES].index("g6e-inference-spot")])
    for text in (mermaid(plan), dot(plan)):
        assert re.search(r"(?<![\d-])0 × ", text) is None
        assert "1-8 × g6e.12xlarge" in text and "4-32 × L40S" in text
        assert "0-4 × g6.12xlarge" in text and "0-16 × L4" in text
        assert text.count("elastic: started for pending jobs, stopped after 15 min idle") == 2


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_dot_is_well_formed(example: Path) -> None:
    text = dot(_plan(example))
    assert text.startswith("digraph ")
    assert text.count("{") == text.count("}")
    if shutil.which("dot"):
        subprocess.run(["dot", "-Tsvg"], input=text.encode(), check=True, capture_output=True)


def test_existing_vpc_has_no_endpoint_and_empty_pools_count_no_gpus() -> None:
    import yaml

    p5 = next(p for p in EXAMPLES if p.stem == "p5-training")
    data = yaml.safe_load(p5.read_text())
    data["network"] = {
        "vpc_cidr": None,
        "vpc_id": "vpc-0123456789abcdef0",
        "compute_subnet_id": "subnet-0123456789abcdef0",
        "compute_subnet_cidr": "10.0.0.0/20",
    }
    data["pools"][0]["count"] = 0
    from slurmstack.loader import load_object
    from slurmstack.report.capacity import cluster_capacity

    loaded = load_object(data)
    assert loaded.spec is not None, loaded.findings
    spec = loaded.spec
    plan = build_plan(spec)
    text = mermaid(plan)
    assert "S3 gateway endpoint" not in text and "NAT gateway" not in text
    assert "VPC vpc-0123456789abcdef0" in text
    zero_model = plan.pools[0].facts.accelerator
    assert zero_model is not None
    assert zero_model.model not in cluster_capacity(plan).accelerators_by_model
