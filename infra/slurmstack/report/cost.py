"""What a planned cluster costs at full size (every pool at max_count) and when idle (elastic
nodes stopped), line by line, each price with its source.

Instance prices come from the catalog (on-demand list price, with its region and date) or from
the definition's ``cost.instance_hourly_usd``. Spot and Capacity Block pools are shown at the
on-demand list price and say so (spot varies by the hour; a block's price is set when bought).
Usage-billed services (S3 and EFS storage, NAT data, Lustre-S3 transfers) are listed with their
unit price, out of the totals: the definition does not say how much data there will be.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from slurmstack.catalog import load_catalog
from slurmstack.plan import RESERVED_CAPACITY, ClusterPlan, PoolPlan
from slurmstack.spec import CapacityType, LustreDeployment, RootVolume

PRICES_FILE = Path(__file__).with_name("service_prices.json")


@dataclass(frozen=True)
class CostLine:
    item: str
    category: str  # compute, network, storage, security, monitoring
    hourly_usd: float | None  # None: no price known (see note)
    basis: str  # how the figure was computed
    source: str  # citation of the unit price
    note: str = ""
    pool: str | None = None  # the pool whose instances the line prices
    # The part of hourly_usd paid only while a pool's elastic nodes run (all of them, at max);
    # with no job running they are stopped and the line costs hourly_usd - elastic_hourly_usd.
    elastic_hourly_usd: float = 0.0

    @property
    def idle_hourly_usd(self) -> float | None:
        return None if self.hourly_usd is None else self.hourly_usd - self.elastic_hourly_usd

    @property
    def monthly_usd(self) -> float | None:
        return None if self.hourly_usd is None else self.hourly_usd * hours_per_month()


@dataclass(frozen=True)
class UsagePrice:
    item: str
    unit_price: str
    source: str


@dataclass(frozen=True)
class CostReport:
    lines: tuple[CostLine, ...]
    usage_billed: tuple[UsagePrice, ...]

    @property
    def hourly_usd(self) -> float:
        return sum(line.hourly_usd or 0.0 for line in self.lines)

    @property
    def monthly_usd(self) -> float:
        return self.hourly_usd * hours_per_month()

    @property
    def idle_hourly_usd(self) -> float:
        """What the cluster costs with no job running: every pool at its always-on count
        (elastic nodes stopped), the head node, network and storage as at full size."""
        return sum(line.idle_hourly_usd or 0.0 for line in self.lines)

    @property
    def idle_monthly_usd(self) -> float:
        return self.idle_hourly_usd * hours_per_month()

    @property
    def unpriced(self) -> tuple[str, ...]:
        return tuple(line.item for line in self.lines if line.hourly_usd is None)

    @property
    def unpriced_pools(self) -> tuple[str, ...]:
        """Pools whose instances have no price: the totals leave them out."""
        return tuple(
            line.pool for line in self.lines if line.pool is not None and line.hourly_usd is None
        )

    @property
    def complete(self) -> bool:
        """Every line has a price, so the totals are the whole bill (usage-billed aside)."""
        return not self.unpriced


@lru_cache(maxsize=1)
def service_prices() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PRICES_FILE.read_text())
    return data


def hours_per_month() -> int:
    return int(service_prices()["hours_per_month"])


def unit_price(key: str) -> tuple[float, str]:
    """(value, source) of a service price (service_prices.json)."""
    prices = service_prices()
    entry = prices[key]
    return float(entry["value"]), prices["sources"][entry["source"]]


def usage_price(item: str, key: str, unit: str) -> UsagePrice:
    """A usage-billed service: its unit price (service_prices.json) per ``unit``."""
    value, source = unit_price(key)
    return UsagePrice(item, f"${value}/{unit}", source)


def instance_price(
    instance_type: str, plan: ClusterPlan, facts_price: Any
) -> tuple[float | None, str, str]:
    """(USD per instance-hour, source, note) for one instance type."""
    override = plan.spec.cost.instance_hourly_usd.get(instance_type)
    if override is not None:
        return override, "definition: cost.instance_hourly_usd", "price set by the definition"
    if facts_price is None:
        return (
            None,
            "none",
            "no on-demand list price (sold only as Capacity Blocks?); set cost.instance_hourly_usd",
        )
    catalog = load_catalog()
    source = catalog.sources.get(facts_price.source, facts_price.source)
    note = ""
    if facts_price.region != plan.region:
        note = f"{facts_price.region} list price; {plan.region} may differ"
    return facts_price.usd_per_hour, f"{source} (read {facts_price.date})", note


_CAPACITY_NOTES = {
    CapacityType.ON_DEMAND: "on-demand",
    CapacityType.CAPACITY_RESERVATION: "capacity reservation: billed at the on-demand rate while reserved",
    CapacityType.SPOT: "spot: shown at the on-demand list price, an upper bound; the spot price varies",
    CapacityType.CAPACITY_BLOCK: (
        "capacity block: paid up front at the price set when bought; shown at the on-demand list price"
    ),
}


def gp3_hourly(volume: RootVolume | None, size_gib: int) -> float:
    gb, _ = unit_price("gp3_usd_per_gb_month")
    iops, _ = unit_price("gp3_usd_per_iops_month_above_3000")
    tput, _ = unit_price("gp3_usd_per_mibps_month_above_125")
    monthly = size_gib * gb
    if volume is not None:
        monthly += max(volume.iops - 3000, 0) * iops + max(volume.throughput_mibps - 125, 0) * tput
    return monthly / hours_per_month()


def _pool_lines(pool: PoolPlan, plan: ClusterPlan) -> list[CostLine]:
    price, source, note = instance_price(pool.instance_type, plan, pool.facts.price)
    if pool.capacity.type is CapacityType.SPOT and pool.capacity.max_spot_price and price:
        price = min(price, pool.capacity.max_spot_price)
        note = "spot: shown at max_spot_price, the most it can cost"
    capacity_note = _CAPACITY_NOTES[pool.capacity.type] if price is not None else ""
    elastic_note = (
        f"{pool.elastic_nodes} elastic: started for jobs, stopped after "
        f"{pool.scale_down_idle_minutes} idle min"
        if pool.elastic
        else ""
    )
    notes = "; ".join(n for n in (capacity_note, note, elastic_note) if n)
    nodes = pool.max_count
    counted = f"{pool.count}–{nodes}" if pool.elastic else str(nodes)
    lines = [
        CostLine(
            item=f"pool {pool.name}: {counted} × {pool.instance_type}",
            category="compute",
            hourly_usd=None if price is None else price * nodes,
            basis=f"{nodes} × ${price:,.4f}/h" if price is not None else "unpriced",
            source=source,
            note=notes,
            pool=pool.name,
            # A reservation is paid whether its nodes run or not: idle saves nothing of it.
            elastic_hourly_usd=0.0
            if price is None or pool.capacity.type in RESERVED_CAPACITY
            else price * pool.elastic_nodes,
        )
    ]
    _, ebs_source = unit_price("gp3_usd_per_gb_month")
    # Root volumes end with their instances (delete on termination): elastic ones too.
    per_volume = gp3_hourly(pool.root_volume, pool.root_volume.size_gib)
    lines.append(
        CostLine(
            item=f"pool {pool.name}: root volumes",
            category="storage",
            hourly_usd=per_volume * nodes,
            basis=f"{nodes} × {pool.root_volume.size_gib} GiB gp3",
            source=ebs_source,
            elastic_hourly_usd=per_volume * pool.elastic_nodes,
        )
    )
    return lines


def _lustre_line(plan: ClusterPlan) -> CostLine | None:
    if plan.lustre is None:
        return None
    spec = plan.lustre.spec
    table = service_prices()["lustre_usd_per_gib_month"]
    source = service_prices()["sources"][table["source"]]
    tier = (
        ""
        if spec.deployment in (LustreDeployment.SCRATCH_1, LustreDeployment.SCRATCH_2)
        else str(plan.lustre.per_unit_storage_throughput)
    )
    per_gib = plan.spec.cost.lustre_usd_per_gib_month or table.get(spec.deployment.value, {}).get(
        tier
    )
    if plan.spec.cost.lustre_usd_per_gib_month:
        source = "definition: cost.lustre_usd_per_gib_month"
    label = f"{spec.deployment.value}" + (f"-{tier}" if tier else "")
    if per_gib is None:
        return CostLine(
            f"FSx for Lustre {label}", "storage", None, "unpriced", source, "no price for this tier"
        )
    return CostLine(
        item=f"FSx for Lustre {label}",
        category="storage",
        hourly_usd=spec.capacity_gib * per_gib / hours_per_month(),
        basis=f"{spec.capacity_gib:,} GiB × ${per_gib}/GiB-month",
        source=source,
    )


def cost_report(plan: ClusterPlan) -> CostReport:
    lines: list[CostLine] = []
    head = plan.head
    price, source, note = instance_price(head.instance_type, plan, head.facts.price)
    lines.append(
        CostLine(
            f"head node: {head.instance_type}", "compute", price, "1 × on-demand", source, note
        )
    )
    _, ebs_source = unit_price("gp3_usd_per_gb_month")
    sizes = [head.root_volume.size_gib] + ([] if head.backup else [head.state_volume_gib])
    lines.append(
        CostLine(
            "head node: root volume" if head.backup else "head node: root and Slurm state volumes",
            "storage",
            gp3_hourly(head.root_volume, sizes[0]) + sum(gp3_hourly(None, g) for g in sizes[1:]),
            " + ".join(map(str, sizes)) + " GiB gp3",
            ebs_source,
        )
    )
    for pool in plan.pools:
        lines.extend(_pool_lines(pool, plan))
    # A team's login pools: a module of its own, built on this one's prices.
    from slurmstack.report.login_cost import login_lines, login_usage

    for login in plan.login_pools:
        lines.extend(login_lines(login, plan))
    if plan.spec.network.vpc_id is None:
        nat, nat_source = unit_price("nat_gateway_usd_per_hour")
        ip, _ = unit_price("public_ipv4_usd_per_hour")
        lines.append(
            CostLine(
                "NAT gateway and its public IPv4 address",
                "network",
                nat + ip,
                "1 × hourly",
                nat_source,
            )
        )
    lustre = _lustre_line(plan)
    if lustre is not None:
        lines.append(lustre)
    secret, secret_source = unit_price("secret_usd_per_month")
    lines.append(
        CostLine(
            "munge key secret", "security", secret / hours_per_month(), "1 secret", secret_source
        )
    )
    # What observing the cluster costs: a module of its own, built on this one's prices.
    from slurmstack.report.monitoring_cost import monitoring_lines, monitoring_usage

    lines.extend(monitoring_lines(plan))
    from slurmstack.report.head_failure import head_failure_lines

    lines.extend(head_failure_lines(plan))
    usage = [
        usage_price("S3 bucket storage", "s3_usd_per_gb_month", "GB-month"),
        usage_price("NAT gateway data processed", "nat_gateway_usd_per_gb", "GB"),
    ]
    if plan.creates_home:
        usage.insert(0, usage_price("EFS /home storage", "efs_usd_per_gb_month", "GB-month"))
    if plan.head.backup:  # Slurm's state on EFS, not on the head's volume (report.head_failure)
        usage.append(usage_price("EFS Slurm state", "efs_usd_per_gb_month", "GB-month"))
    usage.extend(login_usage(plan))
    usage.extend(monitoring_usage(plan))
    return CostReport(tuple(lines), tuple(usage))
