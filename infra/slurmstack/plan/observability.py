"""What the plan decides about observing the cluster (docs/observing.md): where Prometheus
keeps its samples and for how long, the alerts' thresholds, whether slurmctld serves its own
metrics (MetricsType, where every daemon's release has it), the prices the cost panels and the
run-rate alert use, and the pools' exporters.

Prometheus, Alertmanager and Grafana run on the head node, not on a monitoring node of their
own: the head is the one node every cluster has, it already holds the state volume that outlives
it (the samples live there too), its security group already reaches every node, and Session
Manager already reaches it; at the node counts where one Prometheus would crowd slurmctld,
``managed_prometheus`` sends the samples to Amazon Managed Service for Prometheus as well, where
dashboards and long retention live (the check `observability-memory` says when).
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.contract import (
    SLURM_NATIVE_METRICS_VERSION,
    MonitoringConfig,
    PoolPrices,
    node_name_prefix,
)
from slurmstack.plan.accounting import pool_price
from slurmstack.plan.cluster import ClusterPlan
from slurmstack.plan.slurm import oldest_slurm_version
from slurmstack.slurm_releases import line_of
from slurmstack.spec import AlertsSpec, ClusterSpec

# Series one node brings: node_exporter with the collectors the head's configuration keeps
# (about 600 on a GPU instance with 32 EFA devices, measured on the virtual cluster with 1),
# the agent's (health, file systems, EFA counters: about 25 per EFA device) and, per GPU,
# dcgm-exporter's default counters (about 40 fields).
SERIES_PER_NODE = 600
SERIES_PER_EFA_DEVICE = 25
SERIES_PER_GPU = 40
# Prometheus's head block and WAL cost about this much memory per active series (Prometheus
# documentation, "Storage", and its maintainers' rule of thumb of 3-8 KiB; the high end for
# churn from jobs' labels).
BYTES_PER_SERIES = 8 * 1024
# The share of the head's memory Prometheus may take before the plan warns (slurmctld,
# slurmdbd and MariaDB share it).
PROMETHEUS_MEMORY_SHARE = 0.25
# Samples on disk: about 1.3 bytes each after compression (Prometheus documentation,
# "Operational aspects": 1-2 bytes per sample).
BYTES_PER_SAMPLE = 1.3


@dataclass(frozen=True)
class ObservabilityPlan:
    retention_days: int
    retention_gib: int
    scrape_interval_seconds: int
    alerts: AlertsSpec
    budget_monthly_usd: float | None
    log_retention_days: int
    managed_prometheus: bool
    managed_grafana: bool
    slurm_native_metrics: bool
    accounting: bool
    gpu_pools: tuple[str, ...]
    capacity_block_pools: tuple[str, ...]
    elastic_pools: tuple[str, ...]
    monitoring: MonitoringConfig
    series_at_full_size: int

    @property
    def prometheus_memory_bytes(self) -> int:
        return self.series_at_full_size * BYTES_PER_SERIES

    def disk_bytes(self) -> int:
        """Samples kept for retention_days at full size (before retention_gib cuts them)."""
        samples = self.series_at_full_size * self.retention_days * 86400
        return int(samples / self.scrape_interval_seconds * BYTES_PER_SAMPLE)


def slurm_native_metrics(spec: ClusterSpec) -> bool:
    """Whether slurmctld serves Slurm's own metrics: slurm.conf sets MetricsType (render.slurm)
    when every daemon's release knows the key (slurm.conf is written for the oldest: a slurmd
    refuses keys its release does not know, so a pool still on 24.11 mid-upgrade keeps it out)
    and the definition sets no PrivateData (any PrivateData turns Slurm's metrics off: its
    Metrics Guide, "Prerequisites"). Otherwise the head's agent writes the same names."""
    line = line_of(oldest_slurm_version(spec))
    if tuple(int(part) for part in line.split(".")) < SLURM_NATIVE_METRICS_VERSION:
        return False
    return not any(key.lower() == "privatedata" for key in spec.slurm.settings)


def series_at_full_size(plan: ClusterPlan) -> int:
    head = SERIES_PER_NODE + 50 * plan.max_node_count  # the head's Slurm series grow with nodes
    nodes = sum(
        p.max_count
        * (
            SERIES_PER_NODE
            + SERIES_PER_EFA_DEVICE * p.expected_efa_devices
            + SERIES_PER_GPU * p.expected_gpus
        )
        for p in plan.pools
    )
    return head + nodes


def observability_plan(plan: ClusterPlan) -> ObservabilityPlan:
    spec = plan.spec.observability
    prices = []
    for pool in plan.pools:
        price = pool_price(plan, pool)
        prices.append(
            PoolPrices(
                pool=pool.name,
                node_prefix=node_name_prefix(pool.name),
                gpus=price.gpus,
                node_usd_per_hour=price.usd_per_hour or 0.0,
            )
        )
    head_price = plan.head.facts.price
    accounting = plan.spec.slurm.accounting.enabled
    native = slurm_native_metrics(plan.spec)
    return ObservabilityPlan(
        retention_days=spec.retention_days,
        retention_gib=spec.retention_gib,
        scrape_interval_seconds=spec.scrape_interval_seconds,
        alerts=spec.alerts,
        budget_monthly_usd=spec.budget_monthly_usd,
        log_retention_days=spec.log_retention_days,
        managed_prometheus=spec.managed_prometheus,
        managed_grafana=spec.managed_grafana,
        slurm_native_metrics=native,
        accounting=accounting,
        gpu_pools=tuple(p.name for p in plan.pools if p.expected_gpus),
        capacity_block_pools=tuple(
            p.name for p in plan.pools if p.capacity.type.value == "capacity_block"
        ),
        elastic_pools=tuple(p.name for p in plan.elastic_pools),
        monitoring=MonitoringConfig(
            cluster=plan.name,
            slurm_native_metrics=native,
            accounting=accounting,
            head_usd_per_hour=head_price.usd_per_hour if head_price is not None else 0.0,
            prices=tuple(prices),
            login_pools=tuple(p.name for p in plan.login_pools),
        ),
        series_at_full_size=series_at_full_size(plan),
    )
