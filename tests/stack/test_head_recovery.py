"""The head node recovers without a person (slurmstack.stack.head_recovery, head_node.auto_recovery),
run through the program under Pulumi mocks (preview=False): the two alarms on the head instance,
their EC2 actions and notifications, EC2's own recovery setting on the instance, and the alert
topic's key that lets CloudWatch publish."""

from __future__ import annotations

import json
from typing import Any

import pytest

from slurmstack.offline.standins import ACCOUNT_ID
from support.stack import T_INSTANCE, run_ok, small_cluster

pytestmark = pytest.mark.stack

T_ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
T_KEY = "aws:kms/key:Key"
T_ALIAS = "aws:kms/alias:Alias"
T_TOPIC = "aws:sns/topic:Topic"


def alarms(result: Any) -> dict[str, Any]:
    return {a.inputs["name"].rsplit("-", 1)[1]: a for a in result.of_type(T_ALARM)}


def test_a_failed_host_recovers_and_a_hung_os_reboots_and_both_tell_the_topic() -> None:
    result = run_ok(small_cluster())
    head = result.one(T_INSTANCE)
    topic = result.one(T_TOPIC).outputs["arn"]
    found = alarms(result)
    assert sorted(found) == ["reboot", "recover"]
    recover, reboot = found["recover"].inputs, found["reboot"].inputs
    assert recover["name"] == "tiny-head-recovery-recover"
    assert (recover["namespace"], recover["metricName"]) == ("AWS/EC2", "StatusCheckFailed_System")
    assert reboot["metricName"] == "StatusCheckFailed_Instance"
    assert recover["alarmActions"] == ["arn:aws:automate:us-east-1:ec2:recover", topic]
    assert reboot["alarmActions"] == ["arn:aws:automate:us-east-1:ec2:reboot", topic]
    for alarm in (recover, reboot):
        # On this head only, every minute's check, acting once it has failed throughout.
        assert alarm["dimensions"] == {"InstanceId": head.outputs["id"]}
        assert (alarm["statistic"], alarm["period"], alarm["threshold"]) == ("Maximum", 60, 1)
        assert alarm["comparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["datapointsToAlarm"] == alarm["evaluationPeriods"]
        assert alarm["okActions"] == [topic] and alarm["treatMissingData"] == "missing"
        assert alarm["tags"]["slurmstack:role"] == "head"
    # The host's failure is acted on sooner than the OS's (a reboot loses slurmctld's memory).
    assert recover["evaluationPeriods"] == 2 and reboot["evaluationPeriods"] == 3
    assert head.inputs["maintenanceOptions"] == {"autoRecovery": "default"}
    assert result.outputs["head_recovery_alarms"] == {
        "recover": "tiny-head-recovery-recover",
        "reboot": "tiny-head-recovery-reboot",
    }


def test_without_auto_recovery_no_alarm_and_ec2s_own_recovery_is_off() -> None:
    definition = small_cluster()
    definition["head_node"]["auto_recovery"] = False
    result = run_ok(definition)
    assert result.of_type(T_ALARM) == []
    assert result.one(T_INSTANCE).inputs["maintenanceOptions"] == {"autoRecovery": "disabled"}
    assert "head_recovery_alarms" not in result.outputs


def test_the_topics_own_key_lets_cloudwatch_of_this_account_and_the_relay_publish() -> None:
    result = run_ok(small_cluster())
    key = result.one(T_KEY)
    topic = result.one(T_TOPIC)
    assert topic.inputs["kmsMasterKeyId"] == key.outputs["arn"]
    assert key.inputs["enableKeyRotation"] is True and key.inputs["deletionWindowInDays"] == 7
    (alias,) = result.of_type(T_ALIAS)
    assert alias.inputs["name"] == "alias/slurmstack/tiny-alerts-key"
    assert alias.inputs["targetKeyId"] == key.outputs["keyId"]
    statements = {s["Sid"]: s for s in json.loads(key.inputs["policy"])["Statement"]}
    assert sorted(statements) == [
        "AccountAdministers",
        "AlertRelayPublishes",
        "CloudWatchAlarmsPublish",
    ]
    assert statements["AccountAdministers"]["Principal"] == {
        "AWS": f"arn:aws:iam::{ACCOUNT_ID}:root"
    }
    cloudwatch = statements["CloudWatchAlarmsPublish"]
    assert cloudwatch["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert cloudwatch["Action"] == ["kms:GenerateDataKey*", "kms:Decrypt"]
    assert cloudwatch["Condition"] == {"StringEquals": {"aws:SourceAccount": ACCOUNT_ID}}
    relay = statements["AlertRelayPublishes"]
    head_role = next(
        r for r in result.of_type("aws:iam/role:Role") if r.inputs["name"] == "tiny-head"
    )
    assert relay["Principal"] == {"AWS": head_role.outputs["arn"]}
    assert relay["Condition"] == {"StringEquals": {"kms:ViaService": "sns.us-east-1.amazonaws.com"}}
    assert "kms:Encrypt" not in relay["Action"] and "kms:*" not in relay["Action"]


def test_cloudwatch_and_kms_take_what_the_stack_sends() -> None:
    """The alarms and the key as the program registers them, sent to moto's CloudWatch and KMS
    (their API shapes and enumerations): CloudWatch keeps both actions on each alarm, KMS the
    policy with its three statements."""
    import boto3
    from moto import mock_aws

    result = run_ok(small_cluster())
    head_id = result.one(T_INSTANCE).outputs["id"]
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        for alarm in result.of_type(T_ALARM):
            i = alarm.inputs
            cloudwatch.put_metric_alarm(
                AlarmName=i["name"],
                AlarmDescription=i["alarmDescription"],
                Namespace=i["namespace"],
                MetricName=i["metricName"],
                Dimensions=[{"Name": k, "Value": v} for k, v in i["dimensions"].items()],
                Statistic=i["statistic"],
                Period=i["period"],
                EvaluationPeriods=i["evaluationPeriods"],
                DatapointsToAlarm=i["datapointsToAlarm"],
                ComparisonOperator=i["comparisonOperator"],
                Threshold=i["threshold"],
                TreatMissingData=i["treatMissingData"],
                AlarmActions=i["alarmActions"],
                OKActions=i["okActions"],
            )
        stored = cloudwatch.describe_alarms()["MetricAlarms"]
        assert {a["AlarmName"] for a in stored} == {
            "tiny-head-recovery-recover",
            "tiny-head-recovery-reboot",
        }
        for alarm in stored:
            assert alarm["Dimensions"] == [{"Name": "InstanceId", "Value": head_id}]
            assert len(alarm["AlarmActions"]) == 2 and alarm["AlarmActions"][0].startswith(
                "arn:aws:automate:us-east-1:ec2:"
            )
        kms = boto3.client("kms", region_name="us-east-1")
        key = result.one(T_KEY).inputs
        made = kms.create_key(Description=key["description"], Policy=key["policy"])
        key_id = made["KeyMetadata"]["KeyId"]
        policy = json.loads(kms.get_key_policy(KeyId=key_id, PolicyName="default")["Policy"])
        assert len(policy["Statement"]) == 3
