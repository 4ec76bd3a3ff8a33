"""Rules that need the catalog or span several fields. Each rule is a small named function
that yields findings with a path; all rules run and every finding is collected.

Rules live in one module per resource family (names, region, instances, capacity, elastic,
head (its failover), network, storage, data (existing file systems, associations), mountpoint, slurm, accounting,
people, nccl, tags, images, health). The rule id is the function name with dashes for
underscores; the comment above each rule says why it exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from slurmstack.catalog import Catalog, load_catalog
from slurmstack.findings import Finding
from slurmstack.spec import ClusterSpec

Rule = Callable[[ClusterSpec, Catalog], Iterable[Finding]]
RULES: list[Rule] = []


def rule(func: Rule) -> Rule:
    """Register a rule. The function name (dashes for underscores) is the rule id."""
    RULES.append(func)
    return func


def rule_id(func: Rule) -> str:
    return func.__name__.replace("_", "-")


def run_checks(spec: ClusterSpec, catalog: Catalog | None = None) -> list[Finding]:
    catalog = catalog or load_catalog()
    findings: list[Finding] = []
    for check in RULES:
        name = rule_id(check)
        for finding in check(spec, catalog):
            findings.append(finding if finding.rule else _with_rule(finding, name))
    return sorted(set(findings), key=lambda f: (f.level.value, f.path, f.message))


def _with_rule(finding: Finding, name: str) -> Finding:
    return Finding(finding.path, finding.message, finding.level, name)


# The rule modules register themselves on import; keep this list in resource-family order.
from slurmstack.checks import (  # noqa: E402
    accounting,
    capacity,
    data,
    elastic,
    head,
    health,
    images,
    instances,
    mountpoint,
    names,
    nccl,
    network,
    observability,
    people,
    region,
    slurm,
    storage,
    tags,
    topology,
)

__all__ = [
    "RULES",
    "Rule",
    "accounting",
    "capacity",
    "data",
    "elastic",
    "head",
    "health",
    "images",
    "instances",
    "mountpoint",
    "names",
    "nccl",
    "network",
    "observability",
    "people",
    "region",
    "rule",
    "rule_id",
    "run_checks",
    "slurm",
    "storage",
    "tags",
    "topology",
]
