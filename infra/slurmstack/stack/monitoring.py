"""The AWS side of observing the cluster (docs/observing.md): the alert topic (SNS; the head's
alert relay publishes every notification to it, the definition's alerts.email subscribe), the
log groups the cluster's logs go to (one per LogSource, kept observability.log_retention_days),
and an AWS Budgets cost budget for the cluster's tag when observability.budget_monthly_usd is
set. Prometheus, Alertmanager and Grafana themselves run on the head node: they are files of
the config store, not resources. The head's and the pools' permissions on these resources are
in slurmstack.stack.policies (monitoring_statements), named by these names, so no role waits
for them."""

from __future__ import annotations

import pulumi
import pulumi_aws.budgets as budgets
import pulumi_aws.cloudwatch as cloudwatch
import pulumi_aws.sns as sns

from slurmstack.contract import (
    CLUSTER_TAG,
    DeployParameter,
    LogSource,
    alert_topic_name,
    log_group_name,
    resource_name,
)
from slurmstack.plan import ClusterPlan, accounting_plan
from slurmstack.stack import parameters
from slurmstack.stack.common import Role, tags

# SNS's AWS managed key: the topic is encrypted at rest like every store of the cluster; its
# key policy lets the account's principals publish through SNS, so no key grant is needed.
SNS_KEY = "alias/aws/sns"
# The budget's alerts: actual spend past 80% of the amount, and the month's forecast past 100%.
BUDGET_ALERTS = (("ACTUAL", 80.0), ("FORECASTED", 100.0))


def log_sources(plan: ClusterPlan) -> tuple[LogSource, ...]:
    """The log groups the cluster has: slurmdbd's only with accounting."""
    return tuple(
        s for s in LogSource if s is not LogSource.SLURMDBD or accounting_plan(plan) is not None
    )


def budget_cost_filter(plan: ClusterPlan) -> str:
    """The cluster's spend in AWS Budgets: resources carrying its cluster tag (a cost allocation
    tag the account's payer activates once; docs/observing.md)."""
    return f"user:{CLUSTER_TAG}${plan.name}"


class Monitoring(pulumi.ComponentResource):
    topic: sns.Topic
    subscriptions: list[sns.TopicSubscription]
    log_groups: dict[LogSource, cloudwatch.LogGroup]
    budget: budgets.Budget | None

    def __init__(self, plan: ClusterPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        name = resource_name(plan.name, Role.MONITORING)
        super().__init__("slurmstack:stack:Monitoring", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        observe = plan.spec.observability
        topic_name = alert_topic_name(plan.name)
        self.topic = sns.Topic(
            topic_name,
            name=topic_name,
            display_name=f"slurmstack {plan.name} alerts"[:100],
            kms_master_key_id=SNS_KEY,
            tags=tags(plan, Role.MONITORING, topic_name),
            opts=child,
        )
        # Each address gets SNS's confirmation mail first; unconfirmed, it receives nothing.
        self.subscriptions = [
            sns.TopicSubscription(
                f"{topic_name}-email-{index}",
                topic=self.topic.arn,
                protocol="email",
                endpoint=str(address),
                opts=child,
            )
            for index, address in enumerate(observe.alerts.email)
        ]
        self.topic_parameter = parameters.publish(
            plan, DeployParameter.ALERT_TOPIC_ARN, self.topic.arn, role=Role.MONITORING, parent=self
        )
        self.log_groups = {}
        for source in log_sources(plan):
            group = log_group_name(plan.name, source)
            self.log_groups[source] = cloudwatch.LogGroup(
                resource_name(plan.name, Role.MONITORING, f"log-{source.value}"),
                name=group,
                retention_in_days=observe.log_retention_days,
                tags=tags(plan, Role.MONITORING, group),
                opts=child,
            )
        self.budget = None
        if observe.budget_monthly_usd is not None:
            self.budget = self._budget(plan, observe.budget_monthly_usd, child)
        self.register_outputs(
            {
                "alert_topic_arn": self.topic.arn,
                "log_groups": {s.value: g.name for s, g in self.log_groups.items()},
            }
        )

    def _budget(
        self, plan: ClusterPlan, amount: float, child: pulumi.ResourceOptions
    ) -> budgets.Budget:
        """The monthly cost budget. Its notifications mail the alert addresses directly:
        Budgets cannot publish to a topic encrypted with SNS's AWS managed key."""
        emails = [str(e) for e in plan.spec.observability.alerts.email]
        name = resource_name(plan.name, Role.MONITORING, "budget")
        return budgets.Budget(
            name,
            name=name,
            budget_type="COST",
            limit_amount=f"{amount:.2f}",
            limit_unit="USD",
            time_unit="MONTHLY",
            cost_filters=[
                budgets.BudgetCostFilterArgs(name="TagKeyValue", values=[budget_cost_filter(plan)])
            ],
            notifications=[
                budgets.BudgetNotificationArgs(
                    comparison_operator="GREATER_THAN",
                    notification_type=kind,
                    threshold=threshold,
                    threshold_type="PERCENTAGE",
                    subscriber_email_addresses=emails,
                )
                for kind, threshold in BUDGET_ALERTS
            ]
            if emails
            else None,
            tags=tags(plan, Role.MONITORING, name),
            opts=child,
        )
