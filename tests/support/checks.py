"""Shared by the tests of slurmstack.checks: a valid base definition that produces no finding
at all, and a case type: mutate the base to trigger exactly one rule, then assert the rule id,
the path and a key part of the message."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from slurmstack.findings import Finding, Level
from slurmstack.validate import validate_object

# A small real cluster: p5 on a Capacity Block with NVMe scratch, a CPU pool, EFA-enabled
# Lustre (19200 GiB at 250 MB/s/TiB), EFS home, one Slurm setting, one NCCL variable, a tag.
BASE: dict[str, Any] = {
    "name": "base",
    "region": "us-east-1",
    "availability_zone": "us-east-1a",
    "network": {"vpc_cidr": "10.42.0.0/16"},
    "head_node": {"instance_type": "m7i.4xlarge"},
    "pools": [
        {
            "name": "train",
            "instance_type": "p5.48xlarge",
            "count": 4,
            "capacity": {"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"},
            "local_scratch": "/scratch",
        },
        {"name": "cpu", "instance_type": "c7i.4xlarge", "count": 2},
    ],
    "storage": {
        "lustre": {
            "capacity_gib": 19200,
            "deployment": "PERSISTENT_2",
            "throughput_per_tib": 250,
            "mount": "/fsx",
            "s3_import_export": "datasets/",
        },
        "home": {"type": "efs"},
    },
    "slurm": {"default_partition": "train", "settings": {"MaxJobCount": 50000}},
    "nccl": {"env": {"NCCL_DEBUG": "WARN"}},
    "tags": {"team": "research"},
}

# Facts for a type the catalog lacks (a made-up CPU type), consistent in every field, with
# a price (an unpriced on-demand pool is a finding of its own).
CUSTOM_FACTS: dict[str, Any] = {
    "vcpus": 16,
    "cores": 8,
    "threads_per_core": 2,
    "memory_mib": 65536,
    "network_gbps": 25,
    "price": {"usd_per_hour": 0.5, "region": "us-east-1", "date": "2026-11-30", "source": "test"},
}

Mutation = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Case:
    """One way to trigger ``rule``: the finding must be at ``path`` and contain ``fragment``."""

    rule: str
    mutate: Mutation
    path: str
    fragment: str
    level: Level = Level.ERROR
    also: frozenset[str] = field(default_factory=frozenset)  # other rules it may trigger
    name: str = ""

    @property
    def id(self) -> str:
        return f"{self.rule}-{self.name}" if self.name else self.rule


def definition(mutate: Mutation | None = None) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    if mutate is not None:
        mutate(data)
    return data


def findings(data: dict[str, Any]) -> list[Finding]:
    result = validate_object(data, source="test")
    assert result.spec is not None, [f.line() for f in result.findings]
    return result.findings


def check_case(case: Case) -> None:
    found = findings(definition(case.mutate))
    mine = [f for f in found if f.rule == case.rule]
    assert mine, f"{case.rule} did not fire; got {[f.line() for f in found]}"
    hits = [f for f in mine if f.path == case.path and case.fragment in f.message]
    assert hits, f"no {case.rule} finding at {case.path} with {case.fragment!r}: {mine}"
    assert all(f.level is case.level for f in hits), hits
    others = {f.rule for f in found} - {case.rule} - set(case.also)
    assert not others, f"{case.id} also triggered {sorted(others)}: {[f.line() for f in found]}"


# Small mutation helpers, so case tables read as data.
def set_in(path: str, value: Any) -> Mutation:
    """Set a dotted path ('pools.0.capacity.type') in the definition."""

    def mutate(data: dict[str, Any]) -> None:
        parts = path.split(".")
        node: Any = data
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        last = parts[-1]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def delete(path: str) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        parts = path.split(".")
        node: Any = data
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[parts[-1]]

    return mutate


def both(*mutations: Mutation) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        for m in mutations:
            m(data)

    return mutate


def add_pool(**pool: Any) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        data["pools"].append(pool)

    return mutate
