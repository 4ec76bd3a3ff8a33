"""Slurm's own metrics (plan.observability.slurm_native_metrics): slurm.conf sets MetricsType,
monitoring.json says so and Prometheus scrapes slurmctld exactly when every daemon's release has
the key (slurm.conf is written for the oldest: a 24.11 slurmd refuses MetricsType) and the
definition sets no PrivateData (which turns Slurm's metrics off). Otherwise the head's agent
writes the names. tests/slurm/test_slurmctld_examples.py scrapes the real 26.05 slurmctld."""

from __future__ import annotations

from typing import Any

import pytest

from slurmstack.plan.observability import observability_plan, slurm_native_metrics
from slurmstack.render.monitoring import head_monitoring_files
from slurmstack.render.slurm import slurm_conf
from support.checks import definition, set_in
from support.stack import plan_of

METRICS_LINE = "MetricsType=metrics/openmetrics"


def scrapes_slurmctld(files: dict[str, str]) -> bool:
    prometheus = next(text for path, text in files.items() if path.endswith("prometheus.yml"))
    return "metrics_path: /metrics/nodes" in prometheus


@pytest.mark.parametrize(
    ("mutate", "native"),
    [
        (None, True),  # the version of record, 26.05
        (set_in("pools.0.slurm_version", "24.11.5"), False),  # a pool mid-upgrade
        (set_in("slurm.version", "24.11.5"), False),
        (set_in("slurm.settings", {"PrivateData": "jobs"}), False),
    ],
    ids=["26.05", "a-pool-on-24.11", "cluster-on-24.11", "private-data"],
)
def test_metrics_type_follows_the_oldest_release_and_private_data(
    mutate: Any, native: bool
) -> None:
    plan = plan_of(definition(mutate))
    assert slurm_native_metrics(plan.spec) is native
    assert observability_plan(plan).monitoring.slurm_native_metrics is native
    assert (METRICS_LINE in slurm_conf(plan).splitlines()) is native
    assert scrapes_slurmctld(head_monitoring_files(plan)) is native
