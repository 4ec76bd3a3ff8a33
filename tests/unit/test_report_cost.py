"""Cost arithmetic against the catalog's prices, the service price table and overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from slurmstack.catalog import load_catalog
from slurmstack.loader import load_object
from slurmstack.plan import build_plan
from slurmstack.report.cost import cost_report, service_prices

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
