"""Every list call pages: the controller sees every group of 100 pools (DescribeAutoScalingGroups
takes at most 50 names unless MaxRecords says more: the controller was blind above 50 pools)
and every instance across DescribeInstances pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from slurmstack.contract import CLUSTER_TAG, ELASTIC_TAG, POOL_TAG, NodeConfig, PoolRef
from slurmstack.node.controller import observe
from slurmstack.node.power import nodes
from support.node import PLAN, Answers, make_node

NAMES_MAX = 50  # Auto Scaling API Reference, DescribeAutoScalingGroups: AutoScalingGroupNames


def enforce_group_names_limit(session: Any) -> list[dict[str, Any]]:
    """What moto does not check and Auto Scaling does: more than 50 names need MaxRecords to
    match, and MaxRecords is at most 100. Returns the requests, as sent."""
    seen: list[dict[str, Any]] = []

    def check(params: dict[str, Any], **_: Any) -> None:
        seen.append(dict(params))
        names, records = params.get("AutoScalingGroupNames") or [], params.get("MaxRecords", 50)
        if records > 100 or len(names) > max(NAMES_MAX, records):
            raise ClientError(
                {"Error": {"Code": "ValidationError", "Message": "too many group names"}},
                "DescribeAutoScalingGroups",
            )

    session.events.register(
        "provide-client-params.autoscaling.DescribeAutoScalingGroups", check, unique_id="limit"
    )
    return seen


def groups(aws: Any, count: int) -> tuple[PoolRef, ...]:
    ec2, asg = aws.client("ec2"), aws.client("autoscaling")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    ec2.create_launch_template(
        LaunchTemplateName="pools",
        LaunchTemplateData={"ImageId": image, "InstanceType": "t3.micro"},
    )
    pools = []
    for n in range(count):
        name = f"p{n:03d}"
        group = f"{PLAN.name}-pool-{name}"
        asg.create_auto_scaling_group(
            AutoScalingGroupName=group,
            LaunchTemplate={"LaunchTemplateName": "pools"},
            MinSize=0,
            MaxSize=1,
            DesiredCapacity=0,
            AvailabilityZones=["us-east-1a"],
        )
        pools.append(PoolRef(name, f"{name}-", name, group=group))
    return tuple(pools)


def config(pools: tuple[PoolRef, ...]) -> NodeConfig:
    return NodeConfig(PLAN.name, "us-east-1", "head", PLAN.parameter_prefix, "s", (), pools=pools)


def test_the_controller_sees_every_group_of_100_pools(aws, tmp_path: Path) -> None:
    requests = enforce_group_names_limit(aws)
    pools = groups(aws, 100)
    node = make_node(tmp_path, aws, "head", run=Answers({}))
    _members, suspended = observe.group_members(node, config(pools))
    assert set(suspended) == {p.group for p in pools}
    assert all(len(r["AutoScalingGroupNames"]) <= NAMES_MAX for r in requests)
    # Asking for all 100 names at once is what Auto Scaling refuses (the old call).
    with pytest.raises(ClientError, match="ValidationError"):
        aws.client("autoscaling").describe_auto_scaling_groups(
            AutoScalingGroupNames=[p.group for p in pools]
        )


def test_the_controller_asks_for_instances_a_page_at_a_time(aws, tmp_path: Path) -> None:
    """DescribeInstances with MaxResults (moto answers everything in one page whatever it is
    asked, so the request is what is checked here; test_every_page_of_instances_is_read has EC2
    answer in several)."""
    ec2 = aws.client("ec2")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    tags = [{"Key": CLUSTER_TAG, "Value": PLAN.name}, {"Key": POOL_TAG, "Value": "p000"}]
    ec2.run_instances(
        ImageId=image, InstanceType="t3.micro", MinCount=23, MaxCount=23,
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )  # fmt: skip
    asked: list[dict[str, Any]] = []
    aws.events.register(
        "provide-client-params.ec2.DescribeInstances",
        lambda params, **_: asked.append(dict(params)),
        unique_id="pages",
    )
    node = make_node(tmp_path, aws, "head", run=Answers({}))
    found, _account = observe.cluster_instances(node, config(()))
    assert len(found) == 23
    assert [a.get("MaxResults") for a in asked] == [1000]


class ShortPages:
    """EC2 answering DescribeInstances a few instances a page, as it may (fewer than MaxResults,
    with a NextToken): moto answers everything at once, so its answer is cut into pages here."""

    def __init__(self, session: Any, size: int) -> None:
        self.size, self.rest, self.requests = size, [], 0
        session.events.register("before-call.ec2.DescribeInstances", self.next_page, unique_id="p1")
        session.events.register("after-call.ec2.DescribeInstances", self.first_page, unique_id="p2")

    def next_page(self, params: dict[str, Any], **_: Any) -> Any:
        self.requests += 1
        body = params.get("body") or {}
        if "NextToken" not in (body if isinstance(body, dict) else {}):
            return None
        page, self.rest = self.rest[: self.size], self.rest[self.size :]
        answer = {
            "Reservations": page,
            **({"NextToken": f"after-{len(self.rest)}"} if self.rest else {}),
        }
        return AWSResponse("", 200, {}, None), answer

    def first_page(self, parsed: dict[str, Any], **_: Any) -> None:
        if "NextToken" in parsed or not parsed.get("Reservations"):
            return
        every = [{**r, "Instances": [i]} for r in parsed["Reservations"] for i in r["Instances"]]
        parsed["Reservations"], self.rest = every[: self.size], every[self.size :]
        if self.rest:
            parsed["NextToken"] = f"after-{len(self.rest)}"


def test_every_page_of_instances_is_read(aws, tmp_path: Path) -> None:
    """The controller and the power programs follow DescribeInstances' pages to the last."""
    ec2 = aws.client("ec2")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    tags = [{"Key": k, "Value": v} for k, v in
            {CLUSTER_TAG: PLAN.name, POOL_TAG: "p000", ELASTIC_TAG: "p000"}.items()]  # fmt: skip
    ec2.run_instances(
        ImageId=image, InstanceType="t3.micro", MinCount=23, MaxCount=23,
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )  # fmt: skip
    pages = ShortPages(aws, 5)
    node = make_node(tmp_path, aws, "head", run=Answers({}))
    found, _account = observe.cluster_instances(node, config(()))
    assert len({i.instance_id for i in found}) == 23 and pages.requests == 5
    pages.requests = 0
    assert len({i.instance_id for i in nodes.instances(node, PLAN.name)}) == 23
    assert pages.requests == 5
