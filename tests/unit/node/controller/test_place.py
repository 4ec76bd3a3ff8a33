"""place: nodes of the pools with topology that joined are placed under their network nodes
(one DescribeInstanceTopology call for them all, one scontrol update per leaf); placed nodes
and pools without topology are never asked about; an instance without an answer is asked
again only after RETRY_SECONDS; EC2 failing leaves every node where it is, reachable."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
from botocore.stub import Stubber

from slurmstack.contract import TOPOLOGY_ASKED_PATH, UNPLACED_TOPOLOGY, PoolRef, topology_value
from slurmstack.node.controller import place as placing
from slurmstack.node.controller.observe import Instance, Observed
from slurmstack.node.slurm import NodeRecord

LEAF_A = ["nn-top", "nn-spine1", "nn-leaf-a"]
LEAF_B = ["nn-top", "nn-spine2", "nn-leaf-b"]
CONFIG = SimpleNamespace(
    pools=(
        PoolRef("gpu", "gpu-", "gpu", topology=True),
        PoolRef("cpu", "cpu-", "cpu", topology=False),
    )
)


class Head:
    """What place uses of the node agent's context: EC2, the state volume, scontrol."""

    def __init__(self, root: Path, client: Any, failing: str = "") -> None:
        self.root = root
        self.aws = SimpleNamespace(ec2=lambda: client)
        self.calls: list[tuple[str, ...]] = []
        self.failing = failing

    def path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def bounded(self, _seconds: float, *cmd: str, check: bool = False):
        self.calls.append(cmd)
        code = 1 if self.failing and any(self.failing in word for word in cmd) else 0
        return subprocess.CompletedProcess(cmd, code, "", "refused" if code else "")


def node(name: str, address: str, feature: str, topology: str | None = None) -> NodeRecord:
    line = f"NodeName={name} NodeAddr={address} State=IDLE AvailableFeatures={feature}"
    return NodeRecord.parse(line + (f" Topology={topology}" if topology else ""))


def observed(now: float = 1000.0, aws: bool = True) -> Observed:
    nodes = (
        node("gpu-1", "10.0.0.1", "gpu", UNPLACED_TOPOLOGY),  # joined: its slurmd's --conf
        node("gpu-2", "10.0.0.2", "gpu", UNPLACED_TOPOLOGY),
        node("gpu-3", "10.0.0.3", "gpu"),  # a CLOUD node from topology.conf: none printed
        node("gpu-4", "10.0.0.4", "gpu", topology_value(LEAF_A)),  # placed on an earlier pass
        node("gpu-5", "10.0.0.5", "gpu", UNPLACED_TOPOLOGY),  # EC2 has no answer for it yet
        node("gpu-6", "10.0.0.6", "gpu", UNPLACED_TOPOLOGY),  # its instance is gone
        node("cpu-1", "10.0.1.1", "cpu", UNPLACED_TOPOLOGY),  # a pool without topology
    )
    gpus = [Instance(f"i-{n}", f"10.0.0.{n}", "gpu", "running") for n in (1, 2, 3, 4, 5)]
    instances = (*gpus, Instance("i-cpu", "10.0.1.1", "cpu", "running"))
    return Observed(now, nodes, frozenset(), aws=aws, instances=instances)


def answer(instance_id: str, path: list[str]) -> dict[str, Any]:
    return {"InstanceId": instance_id, "InstanceType": "p5.48xlarge", "NetworkNodes": path}


def ec2() -> Any:
    return boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x",
                        aws_secret_access_key="x")  # fmt: skip


def test_joined_nodes_are_placed_one_call_and_one_update_per_leaf(tmp_path: Path) -> None:
    client = ec2()
    head = Head(tmp_path, client)
    with Stubber(client) as stub:
        stub.add_response(
            "describe_instance_topology",
            {
                "Instances": [
                    answer("i-1", LEAF_A),
                    answer("i-2", LEAF_A),
                    answer("i-3", LEAF_B),
                    answer("i-5", []),  # listed without network nodes yet
                ]
            },
            {"InstanceIds": ["i-1", "i-2", "i-3", "i-5"]},  # never the placed, gone or cpu
        )
        result = placing.place(head, CONFIG, observed())  # type: ignore[arg-type]
        stub.assert_no_pending_responses()
    assert head.calls == [
        ("scontrol", "update", "nodename=gpu-1,gpu-2", f"topology={topology_value(LEAF_A)}"),
        ("scontrol", "update", "nodename=gpu-3", f"topology={topology_value(LEAF_B)}"),
    ]
    assert result == {
        "placed": {
            topology_value(LEAF_A): ["gpu-1", "gpu-2"],
            topology_value(LEAF_B): ["gpu-3"],
        },
        "unanswered": ["gpu-5"],
    }
    asked = json.loads((tmp_path / TOPOLOGY_ASKED_PATH.lstrip("/")).read_text())
    assert asked == {"i-5": 1000.0}  # only what is still waiting


def test_an_unanswered_instance_is_asked_again_only_after_the_retry(tmp_path: Path) -> None:
    client = ec2()
    head = Head(tmp_path, client)
    path = tmp_path / TOPOLOGY_ASKED_PATH.lstrip("/")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({f"i-{n}": 1000.0 for n in (1, 2, 3, 5)}))
    with Stubber(client) as stub:  # no response queued: any call would fail the test
        assert placing.place(head, CONFIG, observed(now=1000.0 + placing.RETRY_SECONDS - 1)) is None  # type: ignore[arg-type]
        stub.add_response(
            "describe_instance_topology",
            {"Instances": [answer("i-5", LEAF_B)]},
            {"InstanceIds": ["i-1", "i-2", "i-3", "i-5"]},
        )
        later = observed(now=1000.0 + placing.RETRY_SECONDS)
        result = placing.place(head, CONFIG, later)  # type: ignore[arg-type]
    assert result is not None and result["placed"] == {topology_value(LEAF_B): ["gpu-5"]}
    assert head.calls == [
        ("scontrol", "update", "nodename=gpu-5", f"topology={topology_value(LEAF_B)}")
    ]


def test_ec2_failing_leaves_every_node_where_it_is(tmp_path: Path) -> None:
    client = ec2()
    head = Head(tmp_path, client)
    with Stubber(client) as stub:
        stub.add_client_error("describe_instance_topology", "RequestLimitExceeded")
        result = placing.place(head, CONFIG, observed())  # type: ignore[arg-type]
    assert result is not None and "RequestLimitExceeded" in result["error"]
    assert result["unplaced"] == 4
    assert head.calls == []
    # Nothing remembered as asked: the next pass asks again.
    assert not (tmp_path / TOPOLOGY_ASKED_PATH.lstrip("/")).exists()


def test_nothing_is_asked_on_a_pass_where_aws_did_not_answer(tmp_path: Path) -> None:
    client = ec2()
    with Stubber(client):
        assert placing.place(Head(tmp_path, client), CONFIG, observed(aws=False)) is None  # type: ignore[arg-type]


def test_a_refused_update_is_retried_later_and_the_other_leaves_are_placed(tmp_path: Path) -> None:
    client = ec2()
    head = Head(tmp_path, client, failing="gpu-3")
    with Stubber(client) as stub:
        stub.add_response(
            "describe_instance_topology",
            {"Instances": [answer(f"i-{n}", LEAF_A if n < 3 else LEAF_B) for n in (1, 2, 3, 5)]},
        )
        result = placing.place(head, CONFIG, observed())  # type: ignore[arg-type]
    assert result is not None
    assert result["placed"] == {topology_value(LEAF_A): ["gpu-1", "gpu-2"]}
    asked = json.loads((tmp_path / TOPOLOGY_ASKED_PATH.lstrip("/")).read_text())
    assert set(asked) == {"i-3", "i-5"}


class CountingEC2:
    """DescribeInstanceTopology answered from a table: every instance under its leaf."""

    def __init__(self, leaves: dict[str, str]) -> None:
        self.leaves = leaves
        self.calls = 0

    def describe_instance_topology(self, InstanceIds: list[str]) -> dict[str, Any]:
        assert len(InstanceIds) <= 100, "EC2 takes at most 100 instance ids a call"
        self.calls += 1
        return {
            "Instances": [answer(i, ["nn-top", "nn-spine", self.leaves[i]]) for i in InstanceIds]
        }


def test_ten_thousand_joining_nodes_cost_a_hundred_calls_and_one_update_per_leaf(
    tmp_path: Path,
) -> None:
    count, per_leaf = 10_000, 50
    names = [f"gpu-{n}" for n in range(count)]
    leaves = {f"i-{n}": f"nn-leaf{n // per_leaf}" for n in range(count)}
    nodes = tuple(
        node(name, f"10.{n // 65536}.{n // 256 % 256}.{n % 256}", "gpu", UNPLACED_TOPOLOGY)
        for n, name in enumerate(names)
    )
    instances = tuple(
        Instance(f"i-{n}", f"10.{n // 65536}.{n // 256 % 256}.{n % 256}", "gpu", "running")
        for n in range(count)
    )
    client = CountingEC2(leaves)
    head = Head(tmp_path, client)
    seen = Observed(1000.0, nodes, frozenset(), aws=True, instances=instances)
    result = placing.place(head, CONFIG, seen)  # type: ignore[arg-type]
    assert result is not None and result["unanswered"] == []
    assert client.calls == count // 100
    assert len(head.calls) == count // per_leaf  # one scontrol update per leaf
    assert sum(len(v) for v in result["placed"].values()) == count
    # The next pass: every node placed (as Slurm now prints them), nothing asked, nothing run.
    placed = tuple(
        node(r.name, r.address, "gpu", topology_value(["nn-top", "nn-spine", leaves[f"i-{n}"]]))
        for n, r in enumerate(nodes)
    )
    again = Observed(1060.0, placed, frozenset(), aws=True, instances=instances)
    assert placing.place(head, CONFIG, again) is None  # type: ignore[arg-type]
    assert client.calls == count // 100 and len(head.calls) == count // per_leaf
