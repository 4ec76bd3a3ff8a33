"""The AWS side of observing the cluster (docs/observing.md): the alert topic (SNS; the head's
alert relay publishes every notification to it, the definition's alerts.email subscribe), the
log groups the cluster's logs go to (one per LogSource, kept observability.log_retention_days),
and an AWS Budgets cost budget for the cluster's tag when observability.budget_monthly_usd is
set. Prometheus, Alertmanager and Grafana themselves run on the head node: they are files of
the config store, not resources. The head's and the pools' permissions on these resources are
in slurmstack.stack.policies (monitoring_statements), named by these names, so no role waits
for them."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws.amp as amp
import pulumi_aws.budgets as budgets
import pulumi_aws.cloudwatch as cloudwatch
import pulumi_aws.grafana as amg
import pulumi_aws.iam as iam
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
from slurmstack.stack.alert_key import alert_topic_key
from slurmstack.stack.common import Role, tags
from slurmstack.stack.monitoring_policy import remote_write_statement

# The budget's alerts: actual spend past 80% of the amount, and the month's forecast past 100%.
BUDGET_ALERTS = (("ACTUAL", 80.0), ("FORECASTED", 100.0))
# What Amazon Managed Grafana's workspace role may do on the cluster's Prometheus workspace:
# the queries of its Prometheus data source (the AWS managed policy
# AmazonPrometheusQueryAccess's actions), on that workspace only, and list workspaces (the data
# source's console lists them; ListWorkspaces takes no resource).
GRAFANA_QUERY_ACTIONS = (
    "aps:QueryMetrics",
    "aps:GetSeries",
    "aps:GetLabels",
    "aps:GetMetricMetadata",
    "aps:DescribeWorkspace",
)
# The managed Grafana's sign-in: IAM Identity Center (the account must have it enabled).
GRAFANA_AUTHENTICATION = "AWS_SSO"


def remote_write_url(endpoint: str) -> str:
    """A workspace's remote-write URL: its Prometheus endpoint plus api/v1/remote_write (AMP
    User Guide, "Ingest Prometheus metrics to the workspace")."""
    return endpoint.rstrip("/") + "/api/v1/remote_write"


def log_sources(plan: ClusterPlan) -> tuple[LogSource, ...]:
    """The log groups the cluster has: slurmdbd's only with accounting, login's only with
    login pools."""
    wanted = {
        LogSource.SLURMDBD: accounting_plan(plan) is not None,
        LogSource.LOGIN: bool(plan.login_pools),
    }
    return tuple(s for s in LogSource if wanted.get(s, True))


def budget_cost_filter(plan: ClusterPlan) -> str:
    """The cluster's spend in AWS Budgets: resources carrying its cluster tag (a cost allocation
    tag the account's payer activates once; docs/observing.md)."""
    return f"user:{CLUSTER_TAG}${plan.name}"


class Monitoring(pulumi.ComponentResource):
    topic: sns.Topic
    subscriptions: list[sns.TopicSubscription]
    log_groups: dict[LogSource, cloudwatch.LogGroup]
    budget: budgets.Budget | None
    prometheus: amp.Workspace | None
    grafana: amg.Workspace | None

    def __init__(
        self,
        plan: ClusterPlan,
        *,
        head_role: iam.Role | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``head_role``: the head's instance role, which may remote-write to the managed
        Prometheus workspace (observability.managed_prometheus)."""
        name = resource_name(plan.name, Role.MONITORING)
        super().__init__("slurmstack:stack:Monitoring", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        observe = plan.spec.observability
        topic_name = alert_topic_name(plan.name)
        # Its own key: CloudWatch alarms publish to it (slurmstack.stack.alert_key).
        self.topic_key = alert_topic_key(plan, head_role, parent=self)
        self.topic = sns.Topic(
            topic_name,
            name=topic_name,
            display_name=f"slurmstack {plan.name} alerts"[:100],
            kms_master_key_id=self.topic_key.arn,
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
        self.prometheus = self.grafana = None
        if observe.managed_prometheus:
            self.prometheus = self._prometheus(plan, head_role, child)
            if observe.managed_grafana:
                self.grafana = self._grafana(plan, self.prometheus, child)
        outputs: dict[str, pulumi.Input[object]] = {
            "alert_topic_arn": self.topic.arn,
            "log_groups": {s.value: g.name for s, g in self.log_groups.items()},
        }
        if self.prometheus is not None:
            outputs["prometheus_workspace_id"] = self.prometheus.id
        if self.grafana is not None:
            outputs["grafana_endpoint"] = self.grafana.endpoint
        self.register_outputs(outputs)

    def _prometheus(
        self, plan: ClusterPlan, head_role: iam.Role | None, child: pulumi.ResourceOptions
    ) -> amp.Workspace:
        """The Amazon Managed Service for Prometheus workspace, its remote-write URL for the
        head's Prometheus (a parameter: known at deploy time only), and the head role's right
        to write to it, this workspace only (a policy of its own, made once the workspace's
        ARN is known, so the head's role does not wait for it)."""
        name = resource_name(plan.name, Role.MONITORING, "prometheus")
        workspace = amp.Workspace(
            name,
            alias=f"slurmstack-{plan.name}",
            tags=tags(plan, Role.MONITORING, name),
            opts=child,
        )
        self.remote_write_parameter = parameters.publish(
            plan,
            DeployParameter.REMOTE_WRITE_URL,
            workspace.prometheus_endpoint.apply(remote_write_url),
            role=Role.MONITORING,
            parent=self,
        )
        if head_role is not None:
            iam.RolePolicy(
                f"{name}-remote-write",
                name=f"{name}-remote-write",
                role=head_role.id,
                policy=workspace.arn.apply(
                    lambda arn: json.dumps(
                        {"Version": "2012-10-17", "Statement": [remote_write_statement(arn)]}
                    )
                ),
                opts=child,
            )
        return workspace

    def _grafana(
        self, plan: ClusterPlan, prometheus: amp.Workspace, child: pulumi.ResourceOptions
    ) -> amg.Workspace:
        """The Amazon Managed Grafana workspace, signing in through IAM Identity Center, with a
        role of its own that may query the cluster's Prometheus workspace and nothing else.
        Its Prometheus data source is added once in the workspace (docs/observing.md)."""
        name = resource_name(plan.name, Role.MONITORING, "grafana")
        trust = pulumi.Output.from_input(prometheus.arn).apply(
            lambda arn: json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "grafana.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                            # Only workspaces of this account (the confused deputy).
                            "Condition": {"StringEquals": {"aws:SourceAccount": arn.split(":")[4]}},
                        }
                    ],
                }
            )
        )
        role = iam.Role(
            name,
            name=name,
            assume_role_policy=trust,
            description=f"slurmstack {plan.name}: Amazon Managed Grafana, reads its Prometheus",
            tags=tags(plan, Role.MONITORING, name),
            opts=child,
        )
        iam.RolePolicy(
            name,
            name=name,
            role=role.id,
            policy=prometheus.arn.apply(
                lambda arn: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Sid": "QueryClusterWorkspace",
                                "Effect": "Allow",
                                "Action": list(GRAFANA_QUERY_ACTIONS),
                                "Resource": [arn],
                            },
                            {
                                "Sid": "ListWorkspaces",
                                "Effect": "Allow",
                                "Action": ["aps:ListWorkspaces"],
                                "Resource": ["*"],
                            },
                        ],
                    }
                )
            ),
            opts=child,
        )
        return amg.Workspace(
            name,
            name=name,
            description=f"slurmstack {plan.name}: dashboards over its managed Prometheus",
            account_access_type="CURRENT_ACCOUNT",
            authentication_providers=[GRAFANA_AUTHENTICATION],
            permission_type="CUSTOMER_MANAGED",
            role_arn=role.arn,
            data_sources=["PROMETHEUS"],
            tags=tags(plan, Role.MONITORING, name),
            opts=child,
        )

    def _budget(
        self, plan: ClusterPlan, amount: float, child: pulumi.ResourceOptions
    ) -> budgets.Budget:
        """The monthly cost budget. Its notifications mail the alert addresses directly (a
        budget's own subscribers: they need no confirmation through the topic)."""
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
