"""`pulumi up` refuses the unsafe path before registering anything: replacing storage that
storage.protect covers, and touching a pool's launch template while its instance refresh
runs. The program runs here as under `pulumi up` (stack config slurmstack:offline false),
under Pulumi's mocks, with moto as AWS: the record of the last deployment in the cluster's
bucket, found through its SSM parameter."""

from __future__ import annotations

import base64
import copy
import datetime
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from change_mutations import BASE
from slurmstack.change.guard import Refresh
from slurmstack.offline import OfflineRun, config_for, run_program
from slurmstack.stack import deployed

pytestmark = pytest.mark.stack

REGION = "us-east-1"
RECORD = "aws:s3/bucketObjectv2:BucketObjectv2"


def up(definition: dict[str, Any], **config: Any) -> OfflineRun:
    wire = config_for(definition)
    wire["slurmstack:offline"] = "false"
    wire.update({f"slurmstack:{k}": v for k, v in config.items()})
    return run_program(wire)


def leave_record(run: OfflineRun) -> None:
    """What a successful `pulumi up` leaves in AWS: the bucket's parameter and the record."""
    record = next(r for r in run.of_type(RECORD) if r.inputs["key"] == deployed.RECORD_KEY)
    boto3.client("s3", region_name=REGION).create_bucket(Bucket="chg-bucket-0001")
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name="/slurmstack/chg/bucket/name", Value="chg-bucket-0001", Type="String"
    )
    boto3.client("s3", region_name=REGION).put_object(
        Bucket="chg-bucket-0001",
        Key=deployed.RECORD_KEY,
        Body=base64.b64decode(record.inputs["contentBase64"]),
    )


@pytest.fixture
def deployed_base() -> Iterator[None]:
    with mock_aws():
        first = up(BASE)
        assert first.ok, first.error
        leave_record(first)
        yield


def new_lustre(definition: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(definition)
    changed["storage"]["lustre"].update(deployment="PERSISTENT_1", throughput_per_tib=100)
    return changed


def test_a_first_deployment_has_nothing_to_compare_and_leaves_a_record() -> None:
    with mock_aws():
        run = up(new_lustre(BASE))
    assert run.ok, run.error
    record = next(r for r in run.of_type(RECORD) if r.inputs["key"] == deployed.RECORD_KEY)
    assert len(base64.b64decode(record.inputs["contentBase64"])) > 1000  # a real record


@pytest.mark.usefixtures("deployed_base")
def test_replacing_protected_lustre_is_refused_before_anything_is_registered() -> None:
    run = up(new_lustre(BASE))
    assert not run.ok
    message = str(run.error)
    assert "storage: this `pulumi up` would replace chg-lustre" in message
    assert "deploymentType is force-new" in message
    assert "every file on it not yet exported to the bucket would be lost" in message
    assert "slurmstack:acceptDataLoss[0]' chg-lustre" in message
    assert run.custom == []  # nothing registered: no half-made change


@pytest.mark.usefixtures("deployed_base")
def test_a_named_replacement_goes_ahead_on_purpose() -> None:
    run = up(new_lustre(BASE), acceptDataLoss=["chg-lustre"])
    assert run.ok, run.error


@pytest.mark.usefixtures("deployed_base")
def test_ordinary_changes_pass_the_preflight() -> None:
    bigger = copy.deepcopy(BASE)
    bigger["pools"][0]["count"] = 4
    bigger["storage"]["lustre"]["capacity_gib"] = 7200
    run = up(bigger)
    assert run.ok, run.error


@pytest.mark.usefixtures("deployed_base")
def test_a_new_template_during_a_running_refresh_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[list[str]] = []

    def refreshes(self: deployed.AwsObserver, groups: list[str]) -> dict[str, Refresh]:
        asked.append(groups)
        return {"chg-pool-gpu": Refresh("chg-pool-gpu", "InProgress", 40, 3, "2026-12-01 10:00")}

    # moto has no DescribeInstanceRefreshes (the observer's own call is checked below).
    monkeypatch.setattr(deployed.AwsObserver, "refreshes", refreshes)
    newer = copy.deepcopy(BASE)
    newer["image"] = {"version": 2}
    run = up(newer)
    assert asked == [["chg-pool-cpu", "chg-pool-gpu"]]
    assert not run.ok and run.custom == []
    message = str(run.error)
    assert "changes the launch template of chg-pool-gpu" in message
    assert "InProgress (40% done, 3 instances still to replace" in message
    assert "chg-pool-cpu" not in message  # its refresh is not running
    # A change that leaves the templates alone is not held up by the refresh.
    resized = copy.deepcopy(BASE)
    resized["pools"][0]["count"] = 3
    assert up(resized).ok


def test_the_observer_reads_the_latest_refresh_of_each_group() -> None:
    """DescribeInstanceRefreshes as the EC2 Auto Scaling API documents it (botocore's stub
    checks the request and response against the service model)."""
    observer = deployed.AwsObserver(REGION)
    client = boto3.client("autoscaling", region_name=REGION)
    stub = Stubber(client)
    started = datetime.datetime(2026, 12, 1, 10, 0, tzinfo=datetime.UTC)
    stub.add_response(
        "describe_instance_refreshes",
        {"InstanceRefreshes": [{"InstanceRefreshId": "r-1", "AutoScalingGroupName": "g",
                                "Status": "InProgress", "PercentageComplete": 25,
                                "InstancesToUpdate": 6, "StartTime": started}]},
        {"AutoScalingGroupName": "g", "MaxRecords": 1},
    )  # fmt: skip
    stub.add_response(
        "describe_instance_refreshes",
        {"InstanceRefreshes": []},
        {"AutoScalingGroupName": "h", "MaxRecords": 1},
    )
    with stub:
        observer._client = lambda service: client  # type: ignore[method-assign]
        found = observer.refreshes(["g", "h"])
    assert found == {"g": Refresh("g", "InProgress", 25, 6, str(started))}
    assert found["g"].running
