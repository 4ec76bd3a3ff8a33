"""Rules in slurmstack.checks.observability: each case triggers exactly its rule; the Regions
the managed workspaces may be made in are botocore's (the AWS SDK's endpoint data)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import botocore
import pytest

from slurmstack.checks.observability import MANAGED_GRAFANA_REGIONS, MANAGED_PROMETHEUS_REGIONS
from support.checks import Case, check_case, definition, findings, set_in


def managed(prometheus: bool, grafana: bool, region: str | None = None) -> Any:
    def mutate(data: dict[str, Any]) -> None:
        data["observability"] = {"managed_prometheus": prometheus, "managed_grafana": grafana}
        if region is not None:
            data["region"], data["availability_zone"] = region, f"{region}a"

    return mutate


# Other rules a Region without p5 or a capacity block there may trigger.
ELSEWHERE = frozenset({"instance-type-not-offered", "lustre-efa-region"})

CASES = [
    Case(
        "managed-grafana-without-prometheus",
        managed(prometheus=False, grafana=True),
        "observability.managed_grafana",
        "set observability.managed_prometheus: true",
    ),
    Case(
        "managed-observability-region",
        managed(prometheus=True, grafana=True, region="us-west-1"),
        "observability.managed_grafana",
        "Amazon Managed Grafana has no endpoint in us-west-1 (in this geography: us-east-1, "
        "us-east-2, us-gov-east-1, us-gov-west-1, us-west-2)",
        also=ELSEWHERE,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


def test_both_workspaces_where_aws_offers_them_need_no_finding() -> None:
    assert findings(definition(managed(prometheus=True, grafana=True))) == []
    # us-west-1 has Amazon Managed Service for Prometheus, not Amazon Managed Grafana.
    west = findings(definition(managed(prometheus=True, grafana=False, region="us-west-1")))
    assert {f.rule for f in west} <= ELSEWHERE
    assert findings(definition(set_in("observability.managed_prometheus", False))) == []


def _endpoint_regions(service: str) -> set[str]:
    data = json.loads((Path(botocore.__file__).parent / "data" / "endpoints.json").read_text())
    regions: set[str] = set()
    for partition in data["partitions"]:
        if partition["partition"] not in ("aws", "aws-us-gov"):
            continue  # the partitions slurmstack's catalog has Regions in
        for name, endpoint in partition["services"].get(service, {}).get("endpoints", {}).items():
            if "fips" not in name and not endpoint.get("deprecated"):
                regions.add(name)
    return regions


def test_the_workspace_regions_are_botocores() -> None:
    """The checked-in lists against the installed AWS SDK's endpoint data (botocore ships it)."""
    assert _endpoint_regions("aps") == MANAGED_PROMETHEUS_REGIONS
    assert _endpoint_regions("grafana") == MANAGED_GRAFANA_REGIONS
