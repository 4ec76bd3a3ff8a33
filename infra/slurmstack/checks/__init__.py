"""Rules that need the catalog or span several fields. Each rule is a small named function
that yields findings with a path; all rules run and every finding is collected.
(Skeleton: the rule modules are filled in by the checks work.)"""

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


def run_checks(spec: ClusterSpec, catalog: Catalog | None = None) -> list[Finding]:
    catalog = catalog or load_catalog()
    findings: list[Finding] = []
    for check in RULES:
        rule_id = check.__name__.replace("_", "-")
        for finding in check(spec, catalog):
            findings.append(finding if finding.rule else _with_rule(finding, rule_id))
    return sorted(set(findings), key=lambda f: (f.level.value, f.path, f.message))


def _with_rule(finding: Finding, rule_id: str) -> Finding:
    return Finding(finding.path, finding.message, finding.level, rule_id)
