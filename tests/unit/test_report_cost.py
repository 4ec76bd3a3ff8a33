"""Cost arithmetic against the catalog's prices, the service price table and overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from slurmstack.catalog import load_catalog
from slurmstack.loader import load_object
from slurmstack.plan import build_plan
from slurmstack.plan.observability import observability_plan
from slurmstack.report.cost import cost_report, service_prices
from slurmstack.report.monitoring_cost import budget_warning, managed_prometheus_monthly_usd

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _definition(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return data


def _report(data: dict[str, Any]):  # type: ignore[no-untyped-def]
    loaded = load_object(data)
    assert loaded.spec is not None, loaded.findings
    return cost_report(build_plan(loaded.spec))


def _line(report: Any, prefix: str) -> Any:
    return next(line for line in report.lines if line.item.startswith(prefix))


def test_p5_pool_costs_count_times_catalog_price() -> None:
    report = _report(_definition("p5-training.yaml"))
    catalog = load_catalog()
    p5 = catalog.instances["p5.48xlarge"].price
    assert p5 is not None
    train = _line(report, "pool train: 16 × p5.48xlarge")
    assert train.hourly_usd == pytest.approx(16 * p5.usd_per_hour)
    assert "capacity block" in train.note
    head_price = catalog.instances["m7i.4xlarge"].price
    assert head_price is not None
    assert _line(report, "head node: m7i").hourly_usd == pytest.approx(head_price.usd_per_hour)


def test_lustre_cost_is_capacity_times_tier_price() -> None:
    report = _report(_definition("p5-training.yaml"))
    per_gib = service_prices()["lustre_usd_per_gib_month"]["PERSISTENT_2"]["250"]
    lustre = _line(report, "FSx for Lustre PERSISTENT_2-250")
    assert lustre.monthly_usd == pytest.approx(38_400 * per_gib)


def test_totals_add_up_and_month_is_720_hours() -> None:
    report = _report(_definition("p5-training.yaml"))
    assert report.hourly_usd == pytest.approx(sum(line.hourly_usd for line in report.lines))
    assert report.monthly_usd == pytest.approx(report.hourly_usd * 720)
    assert report.unpriced == ()


def test_instance_price_override_changes_the_total() -> None:
    data = _definition("p5-training.yaml")
    before = _report(data)
    data["cost"] = {"instance_hourly_usd": {"p5.48xlarge": 40.0}}
    after = _report(data)
    assert _line(after, "pool train").hourly_usd == pytest.approx(16 * 40.0)
    assert _line(after, "pool train").source == "definition: cost.instance_hourly_usd"
    delta = _line(before, "pool train").hourly_usd - 16 * 40.0
    assert before.hourly_usd - after.hourly_usd == pytest.approx(delta)


def test_lustre_price_override() -> None:
    data = _definition("p5-training.yaml")
    data["cost"] = {"lustre_usd_per_gib_month": 0.5}
    assert _line(_report(data), "FSx for Lustre").monthly_usd == pytest.approx(38_400 * 0.5)


def test_spot_with_max_price_is_capped() -> None:
    report = _report(_definition("g6e-inference-spot.yaml"))
    l4 = _line(report, "pool l4:")
    assert l4.hourly_usd == pytest.approx(4 * 3.5)  # 0 always on, 4 at max_count
    assert l4.idle_hourly_usd == pytest.approx(0.0)
    assert "max_spot_price" in l4.note


def test_type_without_list_price_is_reported_unpriced_not_zero() -> None:
    report = _report(_definition("trainium.yaml"))
    trn2 = _line(report, "pool trn2")
    assert trn2.hourly_usd is None
    assert "cost.instance_hourly_usd" in trn2.note
    assert report.unpriced == ("pool trn2: 4 × trn2.48xlarge",)


def test_every_line_names_a_source() -> None:
    for example in sorted(EXAMPLES.glob("*.yaml")):
        report = _report(yaml.safe_load(example.read_text()))
        for line in report.lines:
            assert line.source, line.item
        assert all(usage.source for usage in report.usage_billed)


def _observed(**observability: Any) -> dict[str, Any]:
    data = _definition("p5-training.yaml")
    data["observability"] = observability
    # An elastic part, so the idle month and the full-size month differ.
    data["pools"][-1]["max_count"] = data["pools"][-1]["count"] + 4
    return data


def _plan(data: dict[str, Any]):  # type: ignore[no-untyped-def]
    loaded = load_object(data)
    assert loaded.spec is not None, loaded.findings
    return build_plan(loaded.spec)


def test_monitoring_runs_on_the_head_and_its_usage_prices_carry_sources() -> None:
    report = _report(_observed(log_retention_days=90))
    line = _line(report, "monitoring: Prometheus")
    assert line.hourly_usd == 0.0 and "head node" in line.source
    usage = {u.item: u for u in report.usage_billed}
    logs = usage["CloudWatch Logs (kept 90 days)"]
    assert logs.unit_price == "$0.50/GB ingested, $0.03/GB-month stored"
    assert "aws.amazon.com/cloudwatch/pricing" in logs.source
    assert "aws.amazon.com/sns/pricing" in usage["alert emails (SNS)"].source
    assert not any("Managed" in u for u in usage)  # off by default
    assert not any(line.item.startswith("Amazon Managed") for line in report.lines)


def test_managed_prometheus_is_priced_from_the_samples_at_full_size() -> None:
    data = _observed(managed_prometheus=True, managed_grafana=True, scrape_interval_seconds=60)
    plan = _plan(data)
    report = cost_report(plan)
    amp = _line(report, "Amazon Managed Service for Prometheus: ingestion")
    series = observability_plan(plan).series_at_full_size
    samples = series * 720 * 3600 // 60
    tiered = min(samples, 2e9) / 1e7 * 0.90 + max(samples - 2e9, 0) / 1e7 * 0.35
    assert amp.monthly_usd == pytest.approx(tiered)
    assert managed_prometheus_monthly_usd(plan) == (pytest.approx(tiered), samples)
    # Twice as often: twice the samples, beyond the first tier at the lower price.
    faster = cost_report(_plan(_observed(managed_prometheus=True, scrape_interval_seconds=30)))
    assert _line(faster, "Amazon Managed").monthly_usd > amp.monthly_usd
    usage = {u.item: u.unit_price for u in report.usage_billed}
    assert usage["Amazon Managed Grafana"] == "$9/editor-month, $5/viewer-month"


@pytest.mark.parametrize(
    ("amount", "expected"),
    [(1.0, "costs with no job running"), (None, None), (10**9, None), ("full", "at full size")],
)
def test_the_budget_is_checked_against_plans_monthly_estimate(amount: Any, expected: Any) -> None:
    idle = cost_report(_plan(_observed()))
    assert idle.idle_monthly_usd < idle.monthly_usd
    if amount == "full":  # between the idle and the full-size month
        amount = round((idle.idle_monthly_usd + idle.monthly_usd) / 2)
    data = _observed() if amount is None else _observed(budget_monthly_usd=amount)
    plan = _plan(data)
    finding = budget_warning(plan, cost_report(plan))
    if expected is None:
        assert finding is None
    else:
        assert finding is not None and finding.path == "observability.budget_monthly_usd"
        assert expected in finding.message and finding.level.value == "warning"
        assert _line(cost_report(plan), "AWS Budgets budget").hourly_usd == 0.0
