"""The head node recovers without a person (head_node.auto_recovery; docs/head-failure.md).

Two CloudWatch alarms on the head instance, both telling the alert topic when they fire and
when they clear:
- its host fails (StatusCheckFailed_System): EC2's recover action moves the same instance to
  healthy hardware: instance id, private address, Elastic IP and EBS volumes stay (EC2 User
  Guide, "CloudWatch action based recovery"), so the state volume and the head's network
  interface (slurmstack.stack.head_node) come back with it and no node notices but the pause;
- its operating system stops answering (StatusCheckFailed_Instance: a hung kernel, exhausted
  memory, a full root): the reboot action, which the recover action cannot be set on (CloudWatch
  User Guide, "Create alarms to stop, terminate, reboot, or recover an EC2 instance").
EC2's own simplified automatic recovery (on by default for supported types) stays on beside the
alarm: the alarm acts after two failed minutes and notifies; without head_node.auto_recovery
both are off, and the head is replaced by hand (`pulumi up --replace`, a stack output names it).
With head_node.backup, the backup controller gets the same two alarms: a backup that died
unnoticed is a head without a backup.
"""

from __future__ import annotations

import pulumi
import pulumi_aws.cloudwatch as cloudwatch

from slurmstack.contract import partition, resource_name
from slurmstack.plan import ClusterPlan
from slurmstack.plan.head import RECOVERY_ALARMS, STATUS_CHECK_PERIOD_SECONDS
from slurmstack.stack.common import Role, tags


def action_arn(plan: ClusterPlan, action: str) -> str:
    return f"arn:{partition(plan.region)}:automate:{plan.region}:ec2:{action}"


class HeadRecovery(pulumi.ComponentResource):
    alarms: dict[str, cloudwatch.MetricAlarm]

    def __init__(
        self,
        plan: ClusterPlan,
        *,
        instance_id: pulumi.Input[str],
        topic_arn: pulumi.Input[str],
        controller: str = "head",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``controller``: "head", or "backup" for the backup controller's instance."""
        suffix = "recovery" if controller == "head" else f"{controller}-recovery"
        name = resource_name(plan.name, Role.HEAD, suffix)
        super().__init__("slurmstack:stack:HeadRecovery", name, None, opts)
        described = "head" if controller == "head" else f"{controller} controller"
        self.alarms = {}
        for alarm in RECOVERY_ALARMS:
            alarm_name = f"{name}-{alarm.suffix}"
            self.alarms[alarm.suffix] = cloudwatch.MetricAlarm(
                alarm_name,
                name=alarm_name,
                alarm_description=f"slurmstack {plan.name}: {alarm.describe(described)}",
                namespace="AWS/EC2",
                metric_name=alarm.metric,
                dimensions={"InstanceId": instance_id},
                statistic="Maximum",
                period=STATUS_CHECK_PERIOD_SECONDS,
                evaluation_periods=alarm.failed_minutes,
                datapoints_to_alarm=alarm.failed_minutes,
                comparison_operator="GreaterThanOrEqualToThreshold",
                threshold=1,
                # No data is no verdict: a stopped head (by an operator) is not a failed one.
                treat_missing_data="missing",
                alarm_actions=[action_arn(plan, alarm.action), topic_arn],
                ok_actions=[topic_arn],
                tags=tags(plan, Role.HEAD, alarm_name),
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.register_outputs({s: a.arn for s, a in self.alarms.items()})
