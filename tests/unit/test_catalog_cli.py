"""`slurmstack catalog [--region R] [--accelerators] [--json]`: what the catalog knows."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from slurmstack.catalog import load_catalog
from slurmstack.cli import app


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["catalog", *args])


def test_json_rows_for_a_region_and_accelerators() -> None:
    result = invoke("--region", "ap-northeast-2", "--accelerators", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["instance_types"]
    names = {row["instance_type"] for row in rows}
    assert {"p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge"} <= names
    assert all(row["accelerator"] is not None for row in rows)
    assert all("ap-northeast-2" in row["regions"] for row in rows)
    catalog = load_catalog()
    expected = {
        name
        for name, facts in catalog.instances.items()
        if facts.accelerator is not None and "ap-northeast-2" in (catalog.offered_in(name) or ())
    }
    assert names == expected


def test_a_region_leaves_out_what_it_does_not_sell() -> None:
    rows = json.loads(invoke("--region", "us-east-1", "--json").output)["instance_types"]
    names = {row["instance_type"] for row in rows}
    assert "hpc7a.96xlarge" not in names and "m7i.4xlarge" in names
    east2 = json.loads(invoke("--region", "us-east-2", "--json").output)["instance_types"]
    assert "hpc7a.96xlarge" in {row["instance_type"] for row in east2}


def test_the_table_lists_every_type_with_facts_price_and_sources() -> None:
    result = invoke()
    assert result.exit_code == 0, result.output
    text = result.output
    assert f"{len(load_catalog().instances)} instance types" in text
    assert "…" not in text
    m6i = next(line for line in text.splitlines() if line.startswith("m6i.4xlarge "))
    assert "16" in m6i and "64 GiB" in m6i and "$0.7680/h us-east-1" in m6i
    p5e = next(line for line in text.splitlines() if line.startswith("p5e.48xlarge "))
    assert "8 × H200" in p5e and "no list price" in p5e
    assert "aws-ec2-on-demand-cpu-families:" in text and "on-demand prices recorded" in text


def test_an_unknown_region_is_a_usage_error_with_a_suggestion() -> None:
    result = invoke("--region", "us-esat-1")
    assert result.exit_code == 2
    assert "did you mean 'us-east-1'" in result.output
