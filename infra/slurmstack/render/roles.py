"""The roles of a cluster: the head node and one per pool."""

from __future__ import annotations

from slurmstack.contract import HEAD_ROLE
from slurmstack.plan import ClusterPlan, PoolPlan


def roles(plan: ClusterPlan) -> tuple[str, ...]:
    return (HEAD_ROLE, *(p.name for p in plan.pools))


def pool_named(plan: ClusterPlan, name: str) -> PoolPlan:
    try:
        return plan.pool(name)
    except KeyError:
        expected = list(roles(plan)[1:])
        raise KeyError(f"no role {name!r}: expected 'head' or one of {expected}") from None
