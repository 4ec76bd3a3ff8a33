"""Property test: random and mutated definitions never raise.

Each case takes an example (or the checks' base definition), applies one to four mutations
at random paths (drop a key, put a random value of another type, wrap or stringify a value,
add an unknown key, duplicate or empty a list), and runs the whole validation. It must
return a spec or findings, never raise; every finding carries a path and a message; and
whenever the result is valid, the planner must accept it too.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurmstack.findings import Level
from slurmstack.plan import build_plan
from slurmstack.validate import validate_object
from support.checks import BASE

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "examples").glob("*.yaml"))]
SEEDS.append(BASE)

# Values that stress types and ranges; text is short so shrinking stays fast.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, 2, 3, 7, 16, 24, 28, 64, 65, 100, 1200, 2400, 3600, 19200, 5000]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        [
            "auto",
            "",
            "/",
            "/fsx",
            "/home",
            "/usr/x",
            "//x",
            "0.0.0.0/0",
            "10.0.0.0/30",
            "172.17.0.0/16",
            "10.42.0.0/24",
            "p5.48xlarge",
            "g6e.12xlarge",
            "hpc7a.96xlarge",
            "m7a.medium",
            "trn2.48xlarge",
            "spot",
            "capacity_block",
            "capacity_reservation",
            "SCRATCH_1",
            "PERSISTENT_1",
            "HDD",
            "cr-0123456789abcdef0",
            "vpc-0123abcd",
            "subnet-0123abcd",
            "us-west-2",
            "eu-north-1a",
            "default",
            "aws:x",
            "RDMAV_FORK_SAFE",
        ]
    ),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=6), inner, max_size=3),
    ),
    max_leaves=6,
)


# "similar" keeps the type, so most such cases pass the models and exercise the checks.
OPS = ["drop", "replace", "wrap", "stringify", "extra", "list", "similar", "similar", "similar"]
DOMAIN_TEXT = st.sampled_from(
    [
        "auto",
        "/scratch",
        "/fsx",
        "/home",
        "/opt/dlami/nvme",
        "/data/",
        "datasets/",
        "/datasets",
        "p5.48xlarge",
        "p4d.24xlarge",
        "g6e.48xlarge",
        "g6.12xlarge",
        "trn1.32xlarge",
        "hpc7a.96xlarge",
        "c7i.48xlarge",
        "m7a.medium",
        "x9.large",
        "on_demand",
        "spot",
        "capacity_block",
        "capacity_reservation",
        "PERSISTENT_1",
        "PERSISTENT_2",
        "SCRATCH_1",
        "SCRATCH_2",
        "SSD",
        "HDD",
        "us-east-1",
        "us-east-2",
        "eu-west-1",
        "us-east-1b",
        "us-west-2a",
        "train",
        "dev",
        "default",
        "all",
        "head",
        "10.0.0.0/16",
        "172.17.0.0/16",
        "44.0.0.0/16",
        "10.0.0.0/24",
        "0.0.0.0/0",
        "cr-0123456789abcdef0",
        "vpc-0123456789abcdef0",
        "subnet-0123456789abcdef0",
        "NCCL_PROTO",
        "simple",
        "FI_PROVIDER",
        "tcp",
        "efa",
        "yes",
        "a#b",
        "x\ny",
    ]
)


def similar(value: Any) -> st.SearchStrategy[Any]:
    """A value of the same type, drawn from the domain (counts, sizes, names, CIDRs)."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.sampled_from(
            [
                0,
                1,
                2,
                4,
                6,
                30,
                64,
                65,
                100,
                250,
                300,
                1200,
                3000,
                4800,
                5000,
                9600,
                16000,
                24000,
                38400,
                200000,
            ]
        )
    if isinstance(value, float):
        return st.floats(min_value=0.01, max_value=100)
    if isinstance(value, str):
        return DOMAIN_TEXT
    return st.just(value)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += paths(value, (*prefix, index))
    return out


def parent_of(data: Any, path: tuple[Any, ...]) -> Any:
    node = data
    for part in path[:-1]:
        node = node[part]
    return node


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    data: Any = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        where = draw(st.sampled_from(paths(data)))
        op = draw(st.sampled_from(OPS))
        if not where:  # the whole definition
            if op in ("replace", "wrap"):
                data = draw(VALUES) if op == "replace" else [data]
            continue
        parent = parent_of(data, where)
        key = where[-1]
        if op == "drop":
            del parent[key]
        elif op == "similar":
            parent[key] = draw(similar(parent[key]))
        elif op == "replace":
            parent[key] = draw(VALUES)
        elif op == "wrap":
            parent[key] = draw(st.sampled_from([[parent[key]], {"value": parent[key]}]))
        elif op == "stringify":
            parent[key] = str(parent[key])
        elif op == "extra" and isinstance(parent[key], dict):
            parent[key][draw(st.text(min_size=1, max_size=8))] = draw(VALUES)
        elif op == "list" and isinstance(parent[key], list):
            items = parent[key]
            parent[key] = draw(st.sampled_from([[], items + items[:1], items[::-1]]))
    return data


@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated())
def test_mutated_definitions_never_raise(data: Any) -> None:
    result = validate_object(data, source="fuzz")
    assert result.spec is not None or result.findings
    for finding in result.findings:
        assert finding.path and finding.message
        assert finding.level in (Level.ERROR, Level.WARNING)
    if result.ok:
        assert result.spec is not None
        plan = build_plan(result.spec)
        assert plan.max_node_count >= 0
        assert not math.isnan(float(plan.max_node_count))
