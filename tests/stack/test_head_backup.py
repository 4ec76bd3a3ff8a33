"""The backup controller (head_node.backup) under Pulumi mocks (preview=False): a second
instance of the head's image and document with an address of its own, Slurm's state on an EFS
file system both controllers mount instead of the head's EBS volume, the ports between them, and
the pools waiting for both controllers before they roll."""

from __future__ import annotations

import base64
import gzip
from typing import Any

import pytest

from support.stack import (
    T_EFS,
    T_ENI,
    T_INGRESS,
    T_INSTANCE,
    T_LT,
    T_MOUNT_TARGET,
    T_PARAM,
    T_VOLUME,
    run_ok,
    small_cluster,
)

pytestmark = pytest.mark.stack

T_ATTACHMENT = "aws:ec2/volumeAttachment:VolumeAttachment"
T_ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"


def with_backup(**accounting: Any) -> dict[str, Any]:
    definition = small_cluster()
    definition["head_node"]["backup"] = True
    definition["slurm"] = {"accounting": accounting or {"database": {"type": "rds"}}}
    return definition


def parameters(result: Any) -> dict[str, Any]:
    prefix = "/slurmstack/tiny/"
    return {p.inputs["name"].removeprefix(prefix): p for p in result.of_type(T_PARAM)}


def document(instance: Any) -> bytes:
    return gzip.decompress(base64.b64decode(instance.inputs["userDataBase64"]))


def test_the_backup_is_the_heads_image_and_document_at_an_address_of_its_own() -> None:
    result = run_ok(with_backup())
    head = result.one(T_INSTANCE, "tiny-head")
    backup = result.one(T_INSTANCE, "tiny-head-backup")
    # One Slurm on both controllers (the head's release parameter), one bootstrap document.
    for key in ("ami", "instanceType", "iamInstanceProfile", "maintenanceOptions"):
        assert backup.inputs[key] == head.inputs[key], key
    assert document(backup) == document(head)
    assert backup.inputs["metadataOptions"]["httpTokens"] == "required"
    assert (
        backup.options.delete_before_replace and "userDataBase64" in backup.options.ignore_changes
    )
    # Its address is its own interface's, kept across replacement and published for every node.
    eni = result.one(T_ENI, "tiny-head-backup")
    assert backup.inputs["primaryNetworkInterface"]["networkInterfaceId"] == eni.outputs["id"]
    params = parameters(result)
    assert params["head/backup-address"].inputs["value"] == eni.outputs["privateIp"]
    assert eni.inputs["subnetId"] == result.one(T_ENI, "tiny-head").inputs["subnetId"]


def test_slurm_state_moves_from_the_heads_volume_to_an_efs_both_mount() -> None:
    without = run_ok(small_cluster())
    assert len(without.of_type(T_VOLUME)) == 1 and len(without.of_type(T_ATTACHMENT)) == 1
    assert "head/state-efs-id" not in parameters(without)
    result = run_ok(with_backup())
    assert result.of_type(T_VOLUME) == [] and result.of_type(T_ATTACHMENT) == []
    state = result.one(T_EFS, "tiny-head-state")
    assert state.inputs["encrypted"] is True
    assert state.inputs["performanceMode"] == "generalPurpose"
    assert state.options.protect and state.options.retain_on_delete
    target = result.one(T_MOUNT_TARGET, "tiny-head-state")
    params = parameters(result)
    assert params["head/state-efs-id"].inputs["value"] == state.outputs["id"]
    # Published only once a controller can mount it.
    assert target.urn in params["head/state-efs-id"].options.dependencies
    assert "head/state-volume-id" not in params


def test_the_controllers_reach_each_others_slurmdbd_and_mount_the_state() -> None:
    # Without Lustre and without /home on EFS: the state's file system alone asks for NFS.
    definition = with_backup()
    definition["storage"] = {"home": None}
    result = run_ok(definition)
    rules = {r.name: r.inputs for r in result.of_type(T_INGRESS)}
    dbd = rules["tiny-head-slurmdbd-from-self"]
    assert (dbd["fromPort"], dbd["toPort"]) == (6819, 6819)
    assert rules["tiny-storage-nfs-from-head"]["fromPort"] == 2049
    assert "tiny-storage-nfs-from-workers" not in rules
    without = small_cluster()
    without["storage"] = definition["storage"]
    names = {r.name for r in run_ok(without).of_type(T_INGRESS)}
    assert "tiny-head-slurmdbd-from-self" not in names
    assert "tiny-storage-nfs-from-head" not in names


def test_pools_roll_only_after_both_controllers_run_the_new_release() -> None:
    result = run_ok(with_backup())
    backup = result.one(T_INSTANCE, "tiny-head-backup")
    head = result.one(T_INSTANCE, "tiny-head")
    for template in result.of_type(T_LT):
        assert {head.urn, backup.urn} <= set(template.options.dependencies), template.name


def test_the_backup_has_the_heads_recovery_alarms_on_its_own_instance() -> None:
    result = run_ok(with_backup())
    backup = result.one(T_INSTANCE, "tiny-head-backup")
    head = result.one(T_INSTANCE, "tiny-head")
    alarms = {a.inputs["name"]: a.inputs for a in result.of_type(T_ALARM)}
    assert sorted(alarms) == [
        "tiny-head-backup-recovery-reboot",
        "tiny-head-backup-recovery-recover",
        "tiny-head-recovery-reboot",
        "tiny-head-recovery-recover",
    ]
    for action in ("recover", "reboot"):
        on_backup = alarms[f"tiny-head-backup-recovery-{action}"]
        on_head = alarms[f"tiny-head-recovery-{action}"]
        assert on_backup["dimensions"] == {"InstanceId": backup.outputs["id"]}
        assert on_head["dimensions"] == {"InstanceId": head.outputs["id"]}
        # The same metric, minutes and actions: only the instance and the words differ.
        for key in ("metricName", "evaluationPeriods", "alarmActions", "okActions"):
            assert on_backup[key] == on_head[key], key
        assert "backup controller's" in on_backup["alarmDescription"]
        assert "head's" in on_head["alarmDescription"]
    assert result.outputs["backup_recovery_alarms"] == {
        "recover": "tiny-head-backup-recovery-recover",
        "reboot": "tiny-head-backup-recovery-reboot",
    }
    definition = with_backup()
    definition["head_node"]["auto_recovery"] = False
    assert run_ok(definition).of_type(T_ALARM) == []
