"""The roles of a cluster: the head node, one per pool and one per login pool."""

from __future__ import annotations

from slurmstack.contract import HEAD_ROLE, is_login_role, login_pool_of
from slurmstack.plan import ClusterPlan, LoginPoolPlan, PoolPlan


def roles(plan: ClusterPlan) -> tuple[str, ...]:
    return (HEAD_ROLE, *(p.name for p in plan.pools), *(p.role for p in plan.login_pools))


def pool_named(plan: ClusterPlan, name: str) -> PoolPlan:
    try:
        return plan.pool(name)
    except KeyError:
        expected = [p.name for p in plan.pools] + [p.role for p in plan.login_pools]
        raise KeyError(f"no role {name!r}: expected 'head' or one of {expected}") from None


def login_pool_named(plan: ClusterPlan, role: str) -> LoginPoolPlan:
    """The login pool of a login role (login/<pool>)."""
    if not is_login_role(role):
        raise KeyError(f"{role!r} is not a login pool's role")
    try:
        return plan.login_pool(login_pool_of(role))
    except KeyError:
        raise KeyError(f"no login pool {login_pool_of(role)!r}") from None
