"""The head's Prometheus and Alertmanager configurations (docs/observing.md): the scrape jobs
(the head itself, every node and GPU node from the agent's file_sd files, login nodes from the
agent's EC2 listing, slurmctld's own endpoints where the Slurm version serves them), the alert
rules and Alertmanager, and, with observability.managed_prometheus, remote write to the
cluster's Amazon Managed Service for Prometheus workspace."""

from __future__ import annotations

from typing import Any

from slurmstack.contract import (
    ALERT_RELAY_PORT,
    ALERTMANAGER_PORT,
    LOGIN_TARGETS_FILE,
    NODE_EXPORTER_PORT,
    PROMETHEUS_DIR,
    PROMETHEUS_RENDERED_CONFIG,
    REMOTE_WRITE_URL_PLACEHOLDER,
    SCRAPE_TARGETS_DIR,
    SLURMCTLD_METRICS_PATHS,
    SLURMCTLD_PORT,
)
from slurmstack.plan import ClusterPlan
from slurmstack.plan.observability import ObservabilityPlan

PROMETHEUS_CONFIG = PROMETHEUS_RENDERED_CONFIG
RULES = f"{PROMETHEUS_DIR}/rules.yml"


def prometheus_config(plan: ClusterPlan, observe: ObservabilityPlan) -> dict[str, Any]:
    interval = f"{observe.scrape_interval_seconds}s"
    scrape: list[dict[str, Any]] = [
        {
            # The head's own node_exporter: its labels (nodes by state, prices, ...) carry
            # node and pool themselves, which the scrape keeps.
            "job_name": "head",
            "honor_labels": True,
            "static_configs": [
                {
                    "targets": [f"127.0.0.1:{NODE_EXPORTER_PORT}"],
                    "labels": {"node": "head", "pool": "head"},
                }
            ],
        },
        {
            "job_name": "nodes",
            "file_sd_configs": [
                {"files": [f"{SCRAPE_TARGETS_DIR}/nodes.json"], "refresh_interval": interval}
            ],
        },
        {
            "job_name": "gpus",
            "file_sd_configs": [
                {"files": [f"{SCRAPE_TARGETS_DIR}/gpus.json"], "refresh_interval": interval}
            ],
        },
    ]
    if plan.login_pools:
        # Login nodes are no Slurm nodes: the head's agent lists them from EC2.
        scrape.append(
            {
                "job_name": "login",
                "file_sd_configs": [{"files": [LOGIN_TARGETS_FILE], "refresh_interval": interval}],
            }
        )
    if observe.slurm_native_metrics:
        for path in SLURMCTLD_METRICS_PATHS:
            scrape.append(
                {
                    "job_name": f"slurmctld-{path.rsplit('/', 1)[-1]}",
                    "metrics_path": path,
                    "static_configs": [{"targets": [f"127.0.0.1:{SLURMCTLD_PORT}"]}],
                }
            )
    config: dict[str, Any] = {
        "global": {
            "scrape_interval": interval,
            "evaluation_interval": interval,
            "external_labels": {"cluster": plan.name},
        },
        "rule_files": [RULES],
        "alerting": {
            "alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{ALERTMANAGER_PORT}"]}]}]
        },
        "scrape_configs": scrape,
    }
    if observe.managed_prometheus:
        config["remote_write"] = [remote_write(plan)]
    return config


def remote_write(plan: ClusterPlan) -> dict[str, Any]:
    """Every sample also to the cluster's Amazon Managed Service for Prometheus workspace,
    signed by Prometheus itself with the head's instance role (its sigv4 section: credentials
    from the instance metadata, which the head's firewall lets the prometheus user reach). The
    URL is the workspace's, put in at the unit's start (`prometheus-config`)."""
    return {
        "url": REMOTE_WRITE_URL_PLACEHOLDER,
        "name": "amazon-managed-prometheus",
        "sigv4": {"region": plan.region},
        # AMP's ingestion guidance: batches of at most 1,000 samples, within its request rate.
        "queue_config": {"max_samples_per_send": 1000, "max_shards": 200, "capacity": 2500},
    }


def alertmanager_config() -> dict[str, Any]:
    return {
        "route": {
            "receiver": "slurmstack",
            "group_by": ["alertname", "node", "pool", "hpc_job"],
            "group_wait": "10s",
            "group_interval": "1m",
            "repeat_interval": "4h",
        },
        "receivers": [
            {
                "name": "slurmstack",
                "webhook_configs": [
                    {"url": f"http://127.0.0.1:{ALERT_RELAY_PORT}/alerts", "send_resolved": True}
                ],
            }
        ],
    }
