"""Small helpers shared by the rule modules: findings with a level, facts per node role."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from slurmstack.catalog import Catalog, InstanceFacts, did_you_mean
from slurmstack.findings import Finding, Level
from slurmstack.rules.efa import resolve_efa
from slurmstack.rules.facts import resolve_facts
from slurmstack.spec import ClusterSpec, PoolSpec


def error(path: str, message: str) -> Finding:
    return Finding(path, message, Level.ERROR)


def warning(path: str, message: str) -> Finding:
    return Finding(path, message, Level.WARNING)


@dataclass(frozen=True)
class PoolFacts:
    """A pool with its resolved facts (only pools whose facts are known)."""

    index: int
    pool: PoolSpec
    facts: InstanceFacts

    @property
    def path(self) -> str:
        return f"pools[{self.index}]"

    @property
    def efa(self) -> bool:
        """EFA as the plan resolves it (auto -> on where the type supports it)."""
        return resolve_efa(self.pool, self.facts)


def pools_with_facts(spec: ClusterSpec, catalog: Catalog) -> Iterator[PoolFacts]:
    """Pools whose instance facts are known; unknown types are reported by their own rule."""
    for index, pool in enumerate(spec.pools):
        facts = resolve_facts(pool.instance_type, pool.instance_facts, catalog)
        if facts is not None:
            yield PoolFacts(index, pool, facts)


def head_facts(spec: ClusterSpec, catalog: Catalog) -> InstanceFacts | None:
    head = spec.head_node
    return resolve_facts(head.instance_type, head.instance_facts, catalog)


def suggestion(name: str, options: list[str], catalog: Catalog) -> str:
    """' (did you mean ...?)' among ``options`` (case-insensitive), '' when none is close."""
    lowered = {option.lower(): option for option in options}
    close = catalog.suggest(name.lower(), list(lowered))
    return did_you_mean([lowered[c] for c in close])


def gib(mib: int) -> str:
    return f"{mib / 1024:g} GiB"
