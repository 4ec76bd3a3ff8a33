"""Every DescribeInstances the agent makes reads all its pages at 10,000 nodes: the controller's
observation, the reaper's live set, the power programs' instances and the resume program's
addresses. EC2 is played by a stand-in that answers from a list of 10,000 instances, applying the
request's filters and MaxResults and handing out NextTokens, as EC2 does (moto would take minutes
to hold that many)."""

from __future__ import annotations

import datetime
import ipaddress
import re
from pathlib import Path
from typing import Any

from botocore.awsrequest import AWSResponse

from slurmstack.contract import CLUSTER_TAG, ELASTIC_TAG, POOL_TAG, NodeConfig, PoolRef
from slurmstack.node.controller import observe
from slurmstack.node.ec2 import live_instances
from slurmstack.node.power import nodes, resume
from support.node import PLAN, Answers, make_node

NODES = 10_000
PAGE_MAX = 1000  # EC2 API Reference, DescribeInstances: MaxResults 5 to 1,000
POOLS = ("p000", "p001", "p002", "p003")
LAUNCHED = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def fleet(count: int) -> list[dict[str, Any]]:
    first = ipaddress.ip_address("10.20.0.10")
    return [
        {
            "InstanceId": f"i-{n:017x}",
            "PrivateIpAddress": str(first + n),
            "State": {"Name": "running"},
            "LaunchTime": LAUNCHED,
            "Tags": [
                {"Key": CLUSTER_TAG, "Value": PLAN.name},
                {"Key": POOL_TAG, "Value": POOLS[n % len(POOLS)]},
                {"Key": ELASTIC_TAG, "Value": POOLS[n % len(POOLS)]},
            ],
        }
        for n in range(count)
    ]


class PagingEC2:
    """DescribeInstances answered from ``instances``: filters applied, at most MaxResults a
    page, and a NextToken while more remain. Every request is kept."""

    def __init__(self, session: Any, instances: list[dict[str, Any]]) -> None:
        self.instances = [(i, {t["Key"]: t["Value"] for t in i["Tags"]}) for i in instances]
        self.requests: list[dict[str, str]] = []
        session.events.register("before-call.ec2.DescribeInstances", self.answer, unique_id="10k")

    def answer(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        body: dict[str, str] = params["body"]
        self.requests.append(body)
        size = int(body.get("MaxResults", PAGE_MAX))
        assert 5 <= size <= PAGE_MAX, f"EC2 refuses MaxResults={size}"
        wanted = {name: set(values) for name, values in filters(body).items()}
        matching = [i for i, tags in self.instances if self.matches(i, tags, wanted)]
        start = int(body.get("NextToken", "0"))
        page = matching[start : start + size]
        answer: dict[str, Any] = {"Reservations": [{"OwnerId": "123456789012", "Instances": page}]}
        if start + size < len(matching):
            answer["NextToken"] = str(start + size)
        return AWSResponse("", 200, {}, None), answer

    @staticmethod
    def matches(
        instance: dict[str, Any], tags: dict[str, str], wanted: dict[str, set[str]]
    ) -> bool:
        for name, values in wanted.items():
            if name == "instance-id":
                have = [instance["InstanceId"]]
            elif name == "private-ip-address":
                have = [instance["PrivateIpAddress"]]
            elif name == "instance-state-name":
                have = [instance["State"]["Name"]]
            elif name == "tag-key":
                have = list(tags)
            elif name.startswith("tag:"):
                have = [tags[name[4:]]] if name[4:] in tags else []
            else:
                raise AssertionError(f"the stand-in does not know the filter {name}")
            if not any(h in values for h in have):
                return False
        return True


def filters(body: dict[str, str]) -> dict[str, list[str]]:
    """The query protocol's Filter.N.Name / Filter.N.Value.M as {name: [values]}."""
    found: dict[str, list[str]] = {}
    for key, name in body.items():
        if m := re.fullmatch(r"Filter\.(\d+)\.Name", key):
            prefix = f"Filter.{m[1]}.Value."
            found[name] = [v for k, v in body.items() if k.startswith(prefix)]
    return found


def config() -> NodeConfig:
    pools = tuple(PoolRef(p, f"{p}-", p, group=f"{PLAN.name}-pool-{p}") for p in POOLS)
    return NodeConfig(PLAN.name, "us-east-1", "head", PLAN.parameter_prefix, "s", (), pools=pools)


def test_every_program_reads_all_10000_instances_a_page_at_a_time(aws, tmp_path: Path) -> None:
    every = fleet(NODES)
    ec2 = PagingEC2(aws, every)
    node = make_node(tmp_path, aws, "head", run=Answers({}))
    pages = NODES // PAGE_MAX

    found, account = observe.cluster_instances(node, config())
    assert len({i.instance_id for i in found}) == NODES and account == "123456789012"
    assert {i.pool for i in found} == set(POOLS)
    assert len(ec2.requests) == pages

    ec2.requests.clear()
    names, addresses = live_instances(node, PLAN.name, config().pools)
    assert len(names) == len(addresses) == NODES
    assert len(ec2.requests) == pages

    ec2.requests.clear()
    elastic = nodes.instances(node, PLAN.name)
    assert len({i.instance_id for i in elastic}) == NODES
    assert len(ec2.requests) == pages


def test_addresses_of_10000_instances_are_asked_for_in_filter_sized_batches(
    aws, tmp_path: Path
) -> None:
    every = fleet(NODES)
    ec2 = PagingEC2(aws, every + fleet(NODES + 50)[NODES:])  # 50 more the question leaves out
    node = make_node(tmp_path, aws, "head", run=Answers({}))
    wanted = [i["InstanceId"] for i in every]

    addresses = resume.instance_addresses(node, PLAN.name, wanted)
    assert addresses == {i["InstanceId"]: i["PrivateIpAddress"] for i in every}
    assert len(ec2.requests) == NODES // nodes.FILTER_VALUES_MAX
    asked = [filters(r)["instance-id"] for r in ec2.requests]
    assert all(len(ids) <= nodes.FILTER_VALUES_MAX for ids in asked)

    ec2.requests.clear()
    held = {f"n{n}": i["PrivateIpAddress"] for n, i in enumerate(every)}
    records = {name: nodes.NodeRecord.parse(f"NodeName={name} NodeAddr={a} State=IDLE")
               for name, a in held.items()}  # fmt: skip
    running = nodes.running_at(node, PLAN.name, records, list(held))
    assert len(running) == NODES
    assert all(running[n].address == a for n, a in held.items())
