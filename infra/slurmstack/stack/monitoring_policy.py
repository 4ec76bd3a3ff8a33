"""The node roles' statements for observing the cluster (slurmstack.stack.monitoring): the
head's alert relay publishes to the alert topic and puts alert events on the default event bus;
every node writes its own logs to the cluster's log groups (a login node its agent's and its
authentication log). Named by their names, so no role waits for the resources. With a managed
Prometheus workspace the head's Prometheus writes its samples there (remote_write_statement, a
policy of its own, made with the workspace). Pure: the policies module and the tests share it."""

from __future__ import annotations

from typing import Any

from slurmstack.contract import (
    HEAD_LOG_FILES,
    LOGIN_LOG_FILES,
    WORKER_LOG_FILES,
    LogSource,
    alert_topic_name,
    log_group_name,
    partition,
)
from slurmstack.plan import ClusterPlan, PoolPlan

# The log groups each kind of node writes: those its log shipper follows files into.
HEAD_LOGS = tuple(HEAD_LOG_FILES)
WORKER_LOGS = tuple(WORKER_LOG_FILES)
LOGIN_LOGS = tuple(LOGIN_LOG_FILES)
LOG_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams")


def _arn(plan: ClusterPlan, account: str, service: str, resource: str) -> str:
    return f"arn:{partition(plan.region)}:{service}:{plan.region}:{account}:{resource}"


def alert_topic_arn(plan: ClusterPlan, account: str) -> str:
    return _arn(plan, account, "sns", alert_topic_name(plan.name))


def default_event_bus_arn(plan: ClusterPlan, account: str) -> str:
    return _arn(plan, account, "events", "event-bus/default")


def log_group_arns(plan: ClusterPlan, account: str, sources: tuple[LogSource, ...]) -> list[str]:
    """A log group and its streams (":*"), for each source."""
    return [
        _arn(plan, account, "logs", f"log-group:{log_group_name(plan.name, s)}:*") for s in sources
    ]


def ship_logs_statement(
    plan: ClusterPlan, account: str, sources: tuple[LogSource, ...]
) -> dict[str, Any]:
    return {
        # The node's logs, continuously, to the cluster's own groups (made by the stack with
        # their retention, so no CreateLogGroup).
        "Sid": "ShipLogsToClusterGroups",
        "Effect": "Allow",
        "Action": list(LOG_ACTIONS),
        "Resource": log_group_arns(plan, account, sources),
    }


def head_monitoring_statements(plan: ClusterPlan, account: str) -> list[dict[str, Any]]:
    return [
        {
            # The alert relay: each notification to the cluster's topic (email, ...).
            "Sid": "PublishAlerts",
            "Effect": "Allow",
            "Action": ["sns:Publish"],
            "Resource": [alert_topic_arn(plan, account)],
        },
        {
            # The alert relay: each alert as an event on the account's default bus, where
            # teams route them with rules on source "slurmstack".
            "Sid": "PutAlertEvents",
            "Effect": "Allow",
            "Action": ["events:PutEvents"],
            "Resource": [default_event_bus_arn(plan, account)],
        },
        ship_logs_statement(plan, account, HEAD_LOGS),
    ]


def pool_monitoring_statements(
    plan: ClusterPlan, pool: PoolPlan, account: str
) -> list[dict[str, Any]]:
    del pool  # every pool's nodes write the same groups (their streams are their instances')
    return [ship_logs_statement(plan, account, WORKER_LOGS)]


def login_monitoring_statements(plan: ClusterPlan, account: str) -> list[dict[str, Any]]:
    """A login node writes its agent's events and its authentication log, nothing else: its
    node_exporter is scraped by the head (no AWS call), and it publishes no alert."""
    return [ship_logs_statement(plan, account, LOGIN_LOGS)]


def remote_write_statement(workspace_arn: str) -> dict[str, Any]:
    """The head's Prometheus: samples into the cluster's managed Prometheus workspace only."""
    return {
        "Sid": "RemoteWriteToClusterWorkspace",
        "Effect": "Allow",
        "Action": ["aps:RemoteWrite"],
        "Resource": [workspace_arn],
    }
