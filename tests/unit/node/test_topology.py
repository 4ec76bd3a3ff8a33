"""EC2's instance topology read and turned into Slurm's topology/tree (slurmstack.node.controller
.topology), from recorded DescribeInstanceTopology answers in the documented shape (EC2 API
Reference, "DescribeInstanceTopology", "InstanceTopology"), checked by botocore's Stubber
against the service model: batches of 100 ids, pages, missing answers, layers of 3 and 4."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from slurmstack.contract import ROOT_SWITCH, UNPLACED_SWITCH, topology_value
from slurmstack.node.controller.topology import (
    IDS_PER_CALL,
    describe_topology,
    placement_updates,
    tree_topology,
)


def answer(instance_id: str, nodes: list[str], kind: str = "p5.48xlarge", **more: Any) -> dict:
    item = {
        "InstanceId": instance_id,
        "InstanceType": kind,
        "GroupName": "train-pool-gpu",
        "NetworkNodes": nodes,
        "AvailabilityZone": "us-east-1a",
        "ZoneId": "use1-az1",
    }
    return {**item, **more}


def ec2() -> Any:
    return boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x",
                        aws_secret_access_key="x")  # fmt: skip


def test_ids_go_a_hundred_a_call_and_every_page_is_read() -> None:
    client = ec2()
    ids = [f"i-{n:017x}" for n in range(150)]
    path = ["nn-1111111111111111a", "nn-2222222222222222b", "nn-3333333333333333c"]
    with Stubber(client) as stub:
        first = ids[:IDS_PER_CALL]
        stub.add_response(
            "describe_instance_topology",
            {"Instances": [answer(i, path) for i in first[:60]], "NextToken": "page-2"},
            {"InstanceIds": first},
        )
        stub.add_response(
            "describe_instance_topology",
            {"Instances": [answer(i, path) for i in first[60:]]},
            {"InstanceIds": first, "NextToken": "page-2"},
        )
        stub.add_response(
            "describe_instance_topology",
            # One instance EC2 does not list (it is not running yet): absent from the result.
            {"Instances": [answer(i, path) for i in ids[IDS_PER_CALL:-1]]},
            {"InstanceIds": ids[IDS_PER_CALL:]},
        )
        found = describe_topology(client, reversed(ids))
        stub.assert_no_pending_responses()
    assert set(found) == set(ids[:-1])
    assert found[ids[0]].network_nodes == tuple(path) and found[ids[0]].capacity_block is None


def test_an_unsupported_type_and_an_ultraserver_block_are_read_as_ec2_gives_them() -> None:
    client = ec2()
    with Stubber(client) as stub:
        stub.add_response(
            "describe_instance_topology",
            {
                "Instances": [
                    answer("i-0000000000000000a", [], kind="c7i.2xlarge"),
                    answer(
                        "i-0000000000000000b",
                        ["nn-a", "nn-b", "nn-c"],
                        kind="p6e-gb200.36xlarge",
                        CapacityBlockId="cr-0123456789abcdef0",
                    ),
                ]
            },
            {"InstanceIds": ["i-0000000000000000a", "i-0000000000000000b"]},
        )
        found = describe_topology(client, ["i-0000000000000000b", "i-0000000000000000a"])
    assert found["i-0000000000000000a"].network_nodes == ()
    assert found["i-0000000000000000b"].capacity_block == "cr-0123456789abcdef0"


def test_the_documented_example_becomes_a_tree_under_one_root() -> None:
    """The EC2 User Guide's example: instances 1 and 2 under NN4, 3 under NN5 (both below
    NN2), 4 under NN6 below NN3; NN1 on top."""
    tree = tree_topology(
        {
            "gpu-1": ["NN1", "NN2", "NN4"],
            "gpu-2": ["NN1", "NN2", "NN4"],
            "gpu-3": ["NN1", "NN2", "NN5"],
            "gpu-4": ["NN1", "NN3", "NN6"],
        }
    )
    assert tree.lines == (
        "SwitchName=NN4 Nodes=gpu-1,gpu-2",
        "SwitchName=NN5 Nodes=gpu-3",
        "SwitchName=NN6 Nodes=gpu-4",
        "SwitchName=NN1 Switches=NN2,NN3",
        "SwitchName=NN2 Switches=NN4,NN5",
        "SwitchName=NN3 Switches=NN6",
        f"SwitchName={ROOT_SWITCH} Switches=NN1",
    )
    assert tree.unplaced == () and tree.conflicts == ()


def test_nodes_ec2_placed_nowhere_stay_schedulable_under_the_root() -> None:
    """No answer (an unsupported type, an instance not yet running) must not leave Slurm with
    nodes no switch reaches: they get a leaf of their own under the root."""
    tree = tree_topology({"gpu-1": ["A", "B", "C"], "cpu-1": [], "cpu-2": []})
    assert f"SwitchName={UNPLACED_SWITCH} Nodes=cpu-1,cpu-2" in tree.lines
    assert tree.lines[-1] == f"SwitchName={ROOT_SWITCH} Switches=A,{UNPLACED_SWITCH}"
    assert tree.unplaced == ("cpu-1", "cpu-2")
    # Nothing placed at all: still one connected tree.
    assert tree_topology({"cpu-1": []}).lines == (
        f"SwitchName={UNPLACED_SWITCH} Nodes=cpu-1",
        f"SwitchName={ROOT_SWITCH} Switches={UNPLACED_SWITCH}",
    )
    assert tree_topology({}).lines == ()


def test_types_of_three_and_four_layers_share_switches_without_a_switch_of_both_kinds() -> None:
    """A switch lists nodes or switches, never both (Slurm's switch_record.c refuses it): a
    network node that is a 3-layer instance's bottom and a 4-layer one's third layer gets a
    leaf of its own for the first."""
    tree = tree_topology({"trn-1": ["T", "S", "L", "X"], "p5-1": ["T", "S", "L"]})
    assert tree.lines == (
        "SwitchName=L-nodes Nodes=p5-1",
        "SwitchName=X Nodes=trn-1",
        "SwitchName=L Switches=L-nodes,X",
        "SwitchName=S Switches=L",
        "SwitchName=T Switches=S",
        f"SwitchName={ROOT_SWITCH} Switches=T",
    )
    for line in tree.lines:
        assert not ("Nodes=" in line and "Switches=" in line), line


def test_a_network_node_given_two_parents_is_kept_under_the_first_and_named() -> None:
    tree = tree_topology({"a-1": ["T", "S1", "L"], "a-2": ["T", "S2", "L"]})
    assert tree.conflicts == ("L",)
    assert "SwitchName=S1 Switches=L" in tree.lines and "SwitchName=L Nodes=a-1,a-2" in tree.lines
    assert not any(line.startswith("SwitchName=S2 ") for line in tree.lines)


@pytest.mark.parametrize("count", [1, 99, 100, 101, 250])
def test_calls_grow_with_hundreds_of_instances_not_with_instances(count: int) -> None:
    class Counting:
        calls: list[int] = []

        def describe_instance_topology(self, **request: Any) -> dict:
            self.calls.append(len(request["InstanceIds"]))
            return {"Instances": [answer(i, ["a", "b", "c"]) for i in request["InstanceIds"]]}

    client = Counting()
    client.calls = []
    found = describe_topology(client, [f"i-{n:017x}" for n in range(count)])
    assert len(found) == count
    assert len(client.calls) == -(-count // IDS_PER_CALL) and max(client.calls) <= IDS_PER_CALL


def test_joining_nodes_under_one_leaf_take_one_update_and_placed_ones_none() -> None:
    leaf = ["nn-top", "nn-spine1", "nn-leaf1"]
    applied = {"gpu-1": topology_value(leaf), "gpu-2": topology_value([])}
    wanted = {"gpu-1": leaf, "gpu-2": leaf, "gpu-3": leaf, "gpu-4": [], "gpu-5": ["a", "b", "c"]}
    updates = placement_updates(wanted, applied)
    assert updates == {
        f"default:{ROOT_SWITCH}:nn-top:nn-spine1:nn-leaf1": ["gpu-2", "gpu-3"],
        f"default:{ROOT_SWITCH}:{UNPLACED_SWITCH}": ["gpu-4"],
        f"default:{ROOT_SWITCH}:a:b:c": ["gpu-5"],
    }
    # Once applied, nothing more to do.
    done = {name: value for value, names in updates.items() for name in names}
    assert placement_updates(wanted, {**applied, **done}) == {}
