"""place for an UltraServer pool: each joining node goes in its UltraServer's block (EC2's
CapacityBlockId) in the same update that places it in the tree; which UltraServer a block is
comes from asking EC2 about one node already in it (Slurm's records are the only memory);
a node without a CapacityBlockId, or with no block left, stays out of the blocks."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.stub import ANY, Stubber

from slurmstack.contract import UNPLACED_TOPOLOGY, PoolRef, block_names, topology_value
from slurmstack.node.controller import place as placing
from slurmstack.node.controller.observe import Instance, Observed
from slurmstack.node.controller.topology import assign_blocks, block_of
from unit.node.controller.test_place import LEAF_A, LEAF_B, Head, ec2, node

TOPOLOGY = "ultra_blocks"
BLOCKS = block_names("ultra", 3)
POOL = PoolRef("ultra", "ultra-", "ultra", topology=True, block_topology=TOPOLOGY, blocks=BLOCKS)
CONFIG = SimpleNamespace(pools=(POOL,))


def test_block_names_and_values() -> None:
    assert BLOCKS == ("ultra-u1", "ultra-u2", "ultra-u3")
    value = topology_value(LEAF_A, (TOPOLOGY, "ultra-u2"))
    assert value == "default:slurmstack-root:nn-top:nn-spine1:nn-leaf-a,ultra_blocks:ultra-u2"
    assert block_of(TOPOLOGY, value) == "ultra-u2"
    assert block_of(TOPOLOGY, UNPLACED_TOPOLOGY) is None
    assert block_of("other_blocks", value) is None


@pytest.mark.parametrize(
    ("joining", "occupied", "expected"),
    [
        # Two UltraServers joining at once: the first free blocks, in order.
        (
            {"a": "cb-1", "b": "cb-1", "c": "cb-2"},
            {},
            {"a": "ultra-u1", "b": "ultra-u1", "c": "ultra-u2"},
        ),
        # A node of an UltraServer already held goes where it is; a new one takes the next free.
        ({"d": "cb-2", "e": "cb-3"}, {"ultra-u1": "cb-2"}, {"d": "ultra-u1", "e": "ultra-u2"}),
        # A block held by a node EC2 said nothing about is taken, though unknown.
        ({"f": "cb-9"}, {"ultra-u1": None}, {"f": "ultra-u2"}),
        # No CapacityBlockId: no block.
        ({"g": None}, {}, {}),
        # Every block held by another UltraServer: none left.
        ({"h": "cb-4"}, {"ultra-u1": "cb-1", "ultra-u2": "cb-2", "ultra-u3": "cb-3"}, {}),
    ],
)
def test_assign_blocks(
    joining: dict[str, str | None], occupied: dict[str, str | None], expected: dict[str, str]
) -> None:
    assert assign_blocks(joining, occupied, BLOCKS) == expected


def observed() -> Observed:
    nodes = (
        node("ultra-1", "10.0.0.1", "ultra", topology_value(LEAF_A, (TOPOLOGY, "ultra-u1"))),
        node("ultra-2", "10.0.0.2", "ultra", topology_value(LEAF_A, (TOPOLOGY, "ultra-u1"))),
        node("ultra-3", "10.0.0.3", "ultra", UNPLACED_TOPOLOGY),  # joins UltraServer cb-1
        node("ultra-4", "10.0.0.4", "ultra", UNPLACED_TOPOLOGY),  # the first of cb-2
        node("ultra-5", "10.0.0.5", "ultra", UNPLACED_TOPOLOGY),  # EC2 gives no block
    )
    instances = tuple(Instance(f"i-{n}", f"10.0.0.{n}", "ultra", "running") for n in range(1, 6))
    return Observed(1000.0, nodes, frozenset(), aws=True, instances=instances)


def answer(instance_id: str, path: list[str], block: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"InstanceId": instance_id, "InstanceType": "trn2u.48xlarge",
                           "NetworkNodes": path}  # fmt: skip
    if block:
        out["CapacityBlockId"] = block
    return out


def test_joining_nodes_go_in_their_ultraservers_blocks_in_one_update_each(tmp_path: Path) -> None:
    client = ec2()
    asked: list[list[str]] = []
    client.meta.events.register(
        "provide-client-params.ec2.DescribeInstanceTopology",
        lambda params, **_: asked.append(sorted(params["InstanceIds"])),
    )
    head = Head(tmp_path, client)
    with Stubber(client) as stub:
        stub.add_response(
            "describe_instance_topology",
            {
                "Instances": [
                    answer("i-1", LEAF_A, "cb-1"),  # stands for block ultra-u1
                    answer("i-3", LEAF_A, "cb-1"),
                    answer("i-4", LEAF_B, "cb-2"),
                    answer("i-5", LEAF_B, None),
                ]
            },
            {"InstanceIds": ANY},
        )
        result = placing.place(head, CONFIG, observed())  # type: ignore[arg-type]
    # The joining three and one node of the one block held (the first Slurm lists): one call.
    assert asked == [["i-1", "i-3", "i-4", "i-5"]]
    assert result is not None
    assert result["placed"] == {
        topology_value(LEAF_A, (TOPOLOGY, "ultra-u1")): ["ultra-3"],
        topology_value(LEAF_B, (TOPOLOGY, "ultra-u2")): ["ultra-4"],
        topology_value(LEAF_B): ["ultra-5"],
    }
    assert result["no_block"] == ["ultra-5"] and result["unanswered"] == []
    updates = [c for c in head.calls if "update" in c]
    assert len(updates) == 3
    assert ("scontrol", "update", "nodename=ultra-3",
            f"topology={topology_value(LEAF_A, (TOPOLOGY, 'ultra-u1'))}") in updates  # fmt: skip
