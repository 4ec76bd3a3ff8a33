"""What observing the cluster costs (docs/observing.md), for plan's cost report: Prometheus,
Alertmanager and Grafana on the head (no instance of their own), Amazon Managed Service for
Prometheus priced from the samples the cluster sends at full size, the usage-billed services
(CloudWatch Logs, alert events and emails, Amazon Managed Grafana) with their unit prices, and
the budget checked against plan's monthly estimate."""

from __future__ import annotations

from slurmstack.findings import Finding, Level
from slurmstack.plan import ClusterPlan
from slurmstack.plan.observability import observability_plan
from slurmstack.report.cost import (
    CostLine,
    CostReport,
    UsagePrice,
    hours_per_month,
    unit_price,
)

# AMP's ingestion tiers (service_prices.json): the first 2 billion samples a month, then the next.
AMP_FIRST_TIER_SAMPLES = 2_000_000_000


def managed_prometheus_monthly_usd(plan: ClusterPlan) -> tuple[float, int]:
    """(USD a month, samples a month) for sending every sample of the cluster at full size to
    Amazon Managed Service for Prometheus (observability.managed_prometheus)."""
    observe = observability_plan(plan)
    samples = observe.series_at_full_size * hours_per_month() * 3600
    samples //= observe.scrape_interval_seconds
    first, _ = unit_price("amp_usd_per_10m_samples_first_2b")
    then, _ = unit_price("amp_usd_per_10m_samples_next_250b")
    in_first = min(samples, AMP_FIRST_TIER_SAMPLES)
    usd = in_first / 1e7 * first + (samples - in_first) / 1e7 * then
    return usd, samples


def monitoring_lines(plan: ClusterPlan) -> list[CostLine]:
    """Observing the cluster (docs/observing.md): Prometheus, Alertmanager and Grafana on the
    head cost no instance of their own; Amazon Managed Service for Prometheus, when on, is
    priced from the samples the cluster sends at full size."""
    observe = observability_plan(plan)
    _, budgets_source = unit_price("budget_usd_per_month")
    lines = [
        CostLine(
            "monitoring: Prometheus, Alertmanager, Grafana",
            "monitoring",
            0.0,
            f"on the head node; samples on its state volume (at most {observe.retention_gib} GiB)",
            "no price of its own: it runs on the head node (docs/observing.md)",
        )
    ]
    if observe.budget_monthly_usd is not None:
        lines.append(
            CostLine(
                "AWS Budgets budget", "monitoring", 0.0, "1 budget, no actions", budgets_source
            )
        )
    if observe.managed_prometheus:
        usd, samples = managed_prometheus_monthly_usd(plan)
        _, source = unit_price("amp_usd_per_10m_samples_first_2b")
        lines.append(
            CostLine(
                "Amazon Managed Service for Prometheus: ingestion",
                "monitoring",
                usd / hours_per_month(),
                f"{observe.series_at_full_size:,} series every "
                f"{observe.scrape_interval_seconds} s = {samples / 1e9:.2f} billion samples a month",
                source,
            )
        )
    return lines


def monitoring_usage(plan: ClusterPlan) -> list[UsagePrice]:
    observe = observability_plan(plan)
    ingest, cw_source = unit_price("cloudwatch_logs_usd_per_gb_ingested")
    stored, _ = unit_price("cloudwatch_logs_usd_per_gb_month")
    events, _ = unit_price("eventbridge_usd_per_million_events")
    email, sns_source = unit_price("sns_email_usd_per_100k")
    usage = [
        UsagePrice(
            f"CloudWatch Logs (kept {observe.log_retention_days} days)",
            f"${ingest:.2f}/GB ingested, ${stored:.2f}/GB-month stored",
            cw_source,
        ),
        UsagePrice("alert events (EventBridge, default bus)", f"${events:.2f}/million", cw_source),
        UsagePrice("alert emails (SNS)", f"${email:.2f}/100,000 (first 1,000 free)", sns_source),
    ]
    if observe.managed_prometheus:
        amp, amp_source = unit_price("amp_usd_per_gb_month")
        usage.append(
            UsagePrice(
                "Amazon Managed Service for Prometheus storage", f"${amp}/GB-month", amp_source
            )
        )
    if observe.managed_grafana:
        editor, amg_source = unit_price("amg_usd_per_editor_month")
        viewer, _ = unit_price("amg_usd_per_viewer_month")
        usage.append(
            UsagePrice(
                "Amazon Managed Grafana",
                f"${editor:g}/editor-month, ${viewer:g}/viewer-month",
                amg_source,
            )
        )
    return usage


def budget_warning(plan: ClusterPlan, cost: CostReport) -> Finding | None:
    """observability.budget_monthly_usd against plan's monthly estimate: a budget below what
    the cluster costs idle alerts every month; one below its full size, whenever it runs full."""
    budget = plan.spec.observability.budget_monthly_usd
    if budget is None:
        return None
    path = "observability.budget_monthly_usd"
    if budget < cost.idle_monthly_usd:
        return Finding(
            path,
            f"${budget:,.0f} is below what the cluster costs with no job running "
            f"(${cost.idle_monthly_usd:,.0f} a month): the budget alerts every month; raise it "
            "or lower pools' count",
            Level.WARNING,
        )
    if budget < cost.monthly_usd:
        days = budget / (cost.hourly_usd * 24) if cost.hourly_usd else 0.0
        return Finding(
            path,
            f"${budget:,.0f} is below the cluster at full size (${cost.monthly_usd:,.0f} a "
            f"month): it is spent after {days:.0f} days at full size",
            Level.WARNING,
        )
    return None
