"""Observing the cluster: the managed Prometheus and Grafana workspaces (docs/observing.md)."""

from __future__ import annotations

from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error
from slurmstack.findings import Finding
from slurmstack.spec import ClusterSpec

# The Regions with an endpoint of each service, as botocore's endpoints.json lists them (the
# AWS SDK's own Region data; botocore 1.44.8, services "aps" and "grafana"; tests compare this
# list with the installed botocore's). A Region missing here has no endpoint: the workspace
# cannot be made there.
MANAGED_PROMETHEUS_REGIONS = frozenset(
    (
        "af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2",
        "ap-northeast-3", "ap-south-1", "ap-south-2", "ap-southeast-1", "ap-southeast-2",
        "ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-6", "ap-southeast-7",
        "ca-central-1", "ca-west-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1",
        "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1",
        "me-south-1", "mx-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-1",
        "us-west-2", "us-gov-east-1", "us-gov-west-1",
    )
)  # fmt: skip
MANAGED_GRAFANA_REGIONS = frozenset(
    (
        "ap-northeast-1", "ap-northeast-2", "ap-southeast-1", "ap-southeast-2", "eu-central-1",
        "eu-west-1", "eu-west-2", "us-east-1", "us-east-2", "us-west-2", "us-gov-east-1",
        "us-gov-west-1",
    )
)  # fmt: skip


# why: Amazon Managed Grafana here reads the cluster's managed Prometheus workspace; without
# one it would be a workspace with nothing to show (the head's Prometheus is on loopback).
@rule
def managed_grafana_without_prometheus(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    observe = spec.observability
    if observe.managed_grafana and not observe.managed_prometheus:
        yield error(
            "observability.managed_grafana",
            "Amazon Managed Grafana reads the cluster's Amazon Managed Service for Prometheus "
            "workspace, and there is none: set observability.managed_prometheus: true as well, "
            "or use the head's Grafana (a Session Manager port forward, docs/observing.md)",
        )


# why: creating a workspace in a Region the service does not serve fails at deploy time, after
# the rest of the cluster is made.
@rule
def managed_observability_region(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    observe = spec.observability
    for wanted, name, regions, path in (
        (observe.managed_prometheus, "Amazon Managed Service for Prometheus",
         MANAGED_PROMETHEUS_REGIONS, "observability.managed_prometheus"),
        (observe.managed_grafana, "Amazon Managed Grafana", MANAGED_GRAFANA_REGIONS,
         "observability.managed_grafana"),
    ):  # fmt: skip
        if wanted and spec.region not in regions:
            near = sorted(r for r in regions if r.split("-")[0] == spec.region.split("-")[0])
            yield error(
                path,
                f"{name} has no endpoint in {spec.region}"
                + (f" (in this geography: {', '.join(near)})" if near else "")
                + f"; turn {path.rsplit('.', 1)[1]} off, or build the cluster in a Region that "
                "offers it",
            )
