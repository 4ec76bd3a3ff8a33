"""The elastic nodes' launch (slurmstack.node.power.launch) for every capacity type, as the head's
ResumeProgram asks EC2 for it, and the back-off of a pool whose launch failed
(slurmstack.node.power.retry)."""

from __future__ import annotations

from typing import Any

import pytest

from slurmstack.contract import ELASTIC_TAG, LaunchRetry
from slurmstack.node.power.launch import fleet_request, fleet_result
from slurmstack.node.power.retry import RetryState
from slurmstack.render.node import elastic_pool
from support.stack import plan_of, small_cluster

SUBNET = "subnet-0123456789abcdef0"
CONFIG = "LaunchTemplateConfigs"


def launch(**pool: Any) -> dict[str, Any]:
    plan = plan_of(small_cluster(count=0, max_count=4, **pool))
    (elastic,) = plan.elastic_pools
    return fleet_request(elastic_pool(plan, elastic), SUBNET, 3, "token-1")


def test_on_demand_from_the_pools_template_into_its_placement_group() -> None:
    request = launch()
    assert request["Type"] == "instant" and request["ClientToken"] == "token-1"
    (config,) = request[CONFIG]
    template = config["LaunchTemplateSpecification"]
    assert template == {"LaunchTemplateName": "tiny-pool-gpu", "Version": "$Default"}
    (override,) = config["Overrides"]
    assert override["SubnetId"] == SUBNET and override["InstanceType"] == "p5.48xlarge"
    # p5.48xlarge has EFA: the pool has a cluster placement group, the fleet launches into it.
    assert override["Placement"] == {"GroupName": "tiny-pool-gpu"}
    target = request["TargetCapacitySpecification"]
    assert target == {"TotalTargetCapacity": 3, "DefaultTargetCapacityType": "on-demand"}
    assert request["OnDemandOptions"]["MinTargetCapacity"] == 1  # what EC2 has, runs now
    assert "CapacityReservationOptions" not in request["OnDemandOptions"]
    assert "SpotOptions" not in request
    for spec in request["TagSpecifications"]:
        tags = {t["Key"]: t["Value"] for t in spec["Tags"]}
        assert tags[ELASTIC_TAG] == "gpu" and tags["slurmstack:cluster"] == "tiny"


def test_spot_at_most_its_max_price() -> None:
    request = launch(capacity={"type": "spot", "max_spot_price": 40.5})
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"
    assert request["SpotOptions"]["AllocationStrategy"] == "price-capacity-optimized"
    assert request[CONFIG][0]["Overrides"][0]["MaxPrice"] == "40.5"
    assert "OnDemandOptions" not in request


def test_an_elastic_capacity_reservation_pool_is_refused_before_any_launch() -> None:
    """EC2 Fleet cannot launch into a Capacity Reservation targeted by id
    (checks.elastic.elastic_capacity_reservation): such a pool never reaches the fleet."""
    from slurmstack.validate import validate_object

    definition = small_cluster(
        count=0,
        max_count=4,
        capacity={"type": "capacity_reservation", "reservation_id": "cr-0fedcba9876543210"},
        placement_group="pg-existing",
    )
    result = validate_object(definition)
    assert not result.ok
    assert [f.rule for f in result.findings if f.level.value == "error"] == [
        "elastic-capacity-reservation"
    ]


def test_capacity_block_is_bought_as_one() -> None:
    request = launch(capacity={"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"})
    # The template carries MarketType capacity-block and the block's id (test_examples).
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == ("capacity-block")
    assert "SpotOptions" not in request


def test_a_fleets_answer_gives_its_instances_and_ec2s_error() -> None:
    result = fleet_result(
        {
            "Instances": [{"InstanceIds": ["i-1", "i-2"]}],
            "Errors": [
                {"ErrorCode": "InsufficientInstanceCapacity", "ErrorMessage": "no p5"},
                {"ErrorCode": "InsufficientInstanceCapacity", "ErrorMessage": "again"},
            ],
        }
    )
    assert result.instance_ids == ("i-1", "i-2")
    assert result.error_text() == "InsufficientInstanceCapacity: no p5"


def test_a_failed_pool_backs_off_doubling_and_a_success_forgets(tmp_path: Any) -> None:
    policy = LaunchRetry(first_seconds=120, max_seconds=1800)
    state = RetryState({})
    delays = []
    for _ in range(6):
        entry = state.failed("gpu", "InsufficientInstanceCapacity: no p5", 1000.0, policy)
        delays.append(entry.retry_at - 1000.0)
    assert delays == [120, 240, 480, 960, 1800, 1800]
    assert not state.due("gpu", 2799.0) and state.due("gpu", 2800.0)
    assert state.due("cpu", 1000.0)  # other pools do not wait
    state.succeeded("gpu")
    assert state.failed("gpu", "x", 0.0, policy).retry_at == pytest.approx(120)
