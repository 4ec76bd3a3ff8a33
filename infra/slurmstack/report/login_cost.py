"""What a team's login pools cost (docs/people-and-login-nodes.md), for plan's cost report:
each pool's always-on instances, root volumes and host key secret, and its Network Load
Balancer's hours with the public address it holds; the balancer's capacity units are priced
by use."""

from __future__ import annotations

from slurmstack.plan import ClusterPlan, LoginPoolPlan
from slurmstack.report.cost import (
    CostLine,
    UsagePrice,
    gp3_hourly,
    hours_per_month,
    instance_price,
    unit_price,
    usage_price,
)


def login_lines(pool: LoginPoolPlan, plan: ClusterPlan) -> list[CostLine]:
    """A login pool: its always-on instances, their root volumes, its host key's secret and,
    with load_balancer, the Network Load Balancer's hours and its one public address (its
    capacity units are priced by use: usage_billed)."""
    price, source, note = instance_price(pool.instance_type, plan, pool.facts.price)
    _, ebs_source = unit_price("gp3_usd_per_gb_month")
    secret, secret_source = unit_price("secret_usd_per_month")
    balancer: list[CostLine] = []
    if pool.load_balancer:
        nlb, nlb_source = unit_price("nlb_usd_per_hour")
        ip, ip_source = unit_price("public_ipv4_usd_per_hour")
        # Internet-facing in one public subnet (stack/login_pool.py): one public IPv4 address.
        balancer.append(
            CostLine(
                f"login pool {pool.name}: load balancer",
                "network",
                nlb + ip,
                f"1 NLB-hour (${nlb}) + 1 public IPv4 address (${ip}/h)",
                f"{nlb_source} {ip_source}",
            )
        )
    return [
        CostLine(
            f"login pool {pool.name}: {pool.count} × {pool.instance_type}",
            "compute",
            None if price is None else price * pool.count,
            f"{pool.count} × on-demand",
            source,
            note,
        ),
        CostLine(
            f"login pool {pool.name}: root volumes",
            "storage",
            gp3_hourly(pool.root_volume, pool.root_volume.size_gib) * pool.count,
            f"{pool.count} × {pool.root_volume.size_gib} GiB gp3",
            ebs_source,
        ),
        CostLine(
            f"login pool {pool.name}: host key secret",
            "security",
            secret / hours_per_month(),
            "1 secret",
            secret_source,
        ),
        *balancer,
    ]


def login_usage(plan: ClusterPlan) -> list[UsagePrice]:
    """The balancers' capacity units (NLCU), billed by the connections and bytes they carry."""
    if not any(login.load_balancer for login in plan.login_pools):
        return []
    return [
        usage_price(
            "login load balancer capacity units (NLCU)", "nlb_usd_per_nlcu_hour", "NLCU-hour"
        )
    ]
