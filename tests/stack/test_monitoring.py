"""The AWS side of observing the cluster (slurmstack.stack.monitoring), run through the program
under Pulumi mocks (preview=False): the alert topic and its email subscriptions, the parameter
the relay reads, the log groups with the definition's retention, the budget, and the node
roles' permissions on them, asked through the IAM stand-in."""

from __future__ import annotations

import json
from typing import Any

import pytest

from slurmstack.offline.standins import ACCOUNT_ID
from stack.iam_eval import decide
from support.stack import T_PARAM, T_ROLE_POLICY, example, run_ok, small_cluster, with_changes

pytestmark = pytest.mark.stack

T_TOPIC = "aws:sns/topic:Topic"
T_SUBSCRIPTION = "aws:sns/topicSubscription:TopicSubscription"
T_LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
T_BUDGET = "aws:budgets/budget:Budget"


def observed(**observability: Any) -> dict[str, Any]:
    return with_changes(small_cluster(), observability=observability)


def cluster_log_groups(result: Any, cluster: str) -> dict[str, Any]:
    """The cluster's log groups (the image builds have their own, tests/stack/test_images.py)."""
    prefix = f"/slurmstack/{cluster}/"
    return {
        g.inputs["name"].removeprefix(prefix): g
        for g in result.of_type(T_LOG_GROUP)
        if g.inputs["name"].startswith(prefix)
    }


def test_the_alert_topic_is_encrypted_subscribed_and_published_for_the_relay() -> None:
    emails = ["ops@example.com", "oncall@example.com"]
    result = run_ok(observed(alerts={"email": emails}))
    topic = result.one(T_TOPIC)
    assert topic.inputs["name"] == "tiny-alerts"
    assert topic.inputs["kmsMasterKeyId"] == result.one("aws:kms/key:Key").outputs["arn"]
    assert topic.inputs["tags"]["slurmstack:role"] == "monitoring"
    subscriptions = result.of_type(T_SUBSCRIPTION)
    assert sorted(s.inputs["endpoint"] for s in subscriptions) == sorted(emails)
    assert {s.inputs["protocol"] for s in subscriptions} == {"email"}
    assert {s.inputs["topic"] for s in subscriptions} == {topic.outputs["arn"]}
    (parameter,) = [
        p
        for p in result.of_type(T_PARAM)
        if p.inputs["name"].endswith("/monitoring/alert-topic-arn")
    ]
    assert parameter.inputs["value"] == topic.outputs["arn"]
    assert result.outputs["alert_topic_arn"] == topic.outputs["arn"]
    # No address: the topic still takes the relay's messages, nobody is subscribed.
    assert run_ok(small_cluster()).of_type(T_SUBSCRIPTION) == []


def test_log_groups_follow_the_definitions_retention_and_accounting() -> None:
    result = run_ok(observed(log_retention_days=90))
    groups = cluster_log_groups(result, "tiny")
    assert sorted(groups) == ["agent", "health-check", "slurmctld", "slurmd", "slurmdbd"]
    assert {g.inputs["retentionInDays"] for g in groups.values()} == {90}
    assert result.outputs["log_groups"]["slurmd"] == "/slurmstack/tiny/slurmd"
    # slurmdbd's only with accounting; the default retention is 30 days.
    off = run_ok(with_changes(small_cluster(), slurm={"accounting": {"enabled": False}}))
    assert sorted(cluster_log_groups(off, "tiny")) == [
        "agent",
        "health-check",
        "slurmctld",
        "slurmd",
    ]
    p5 = cluster_log_groups(run_ok(example("p5-training")), "llm-train")
    assert "slurmdbd" in p5 and {g.inputs["retentionInDays"] for g in p5.values()} == {30}


def test_a_budget_only_when_asked_filtered_by_the_cluster_tag() -> None:
    assert run_ok(small_cluster()).of_type(T_BUDGET) == []
    result = run_ok(observed(budget_monthly_usd=250000, alerts={"email": ["ops@example.com"]}))
    budget = result.one(T_BUDGET)
    assert budget.inputs["limitAmount"] == "250000.00"
    assert budget.inputs["limitUnit"] == "USD" and budget.inputs["timeUnit"] == "MONTHLY"
    assert budget.inputs["costFilters"] == [
        {"name": "TagKeyValue", "values": ["user:slurmstack:cluster$tiny"]}
    ]
    kinds = {(n["notificationType"], n["threshold"]) for n in budget.inputs["notifications"]}
    assert kinds == {("ACTUAL", 80.0), ("FORECASTED", 100.0)}
    for notification in budget.inputs["notifications"]:
        assert notification["subscriberEmailAddresses"] == ["ops@example.com"]


def policies(result: Any) -> dict[str, dict[str, Any]]:
    return {p.inputs["name"]: json.loads(p.inputs["policy"]) for p in result.of_type(T_ROLE_POLICY)}


def test_the_head_relays_alerts_and_every_node_ships_only_its_kinds_logs() -> None:
    result = run_ok(small_cluster())
    roles = policies(result)
    head, pool = roles["tiny-head"], roles["tiny-pool-gpu"]
    topic = result.one(T_TOPIC).outputs["arn"]
    other_topic = f"arn:aws:sns:us-east-1:{ACCOUNT_ID}:other-alerts"
    bus = f"arn:aws:events:us-east-1:{ACCOUNT_ID}:event-bus/default"
    assert decide([head], "sns:Publish", topic) == "allow"
    assert decide([head], "sns:Publish", other_topic) == "implicit-deny"
    assert decide([head], "events:PutEvents", bus) == "allow"
    assert decide([pool], "sns:Publish", topic) == "implicit-deny"
    assert decide([pool], "events:PutEvents", bus) == "implicit-deny"

    def stream(source: str, cluster: str = "tiny") -> str:
        return (
            f"arn:aws:logs:us-east-1:{ACCOUNT_ID}:log-group:/slurmstack/{cluster}/{source}"
            ":log-stream:i-0aaaaaaaaaaaaaaaa"
        )

    for source in ("slurmctld", "agent"):
        assert decide([head], "logs:PutLogEvents", stream(source)) == "allow", source
    for source in ("slurmd", "agent", "health-check"):
        assert decide([pool], "logs:PutLogEvents", stream(source)) == "allow", source
    assert decide([pool], "logs:PutLogEvents", stream("slurmctld")) == "implicit-deny"
    assert decide([head], "logs:PutLogEvents", stream("slurmd")) == "implicit-deny"
    assert decide([pool], "logs:PutLogEvents", stream("agent", "other")) == "implicit-deny"
    for role in (head, pool):
        assert decide([role], "logs:DeleteLogGroup", stream("agent")) == "implicit-deny"
