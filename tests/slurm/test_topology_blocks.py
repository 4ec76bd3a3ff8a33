"""UltraServer pools on the real daemons of the version of record (issue 27, topology/block): the
rendered topology.yaml (the tree as "default" beside the pool's block topology, its blocks
listed empty), the pool's two partitions (its own on the tree, `<pool>_blocks` on the blocks),
five dynamic trn2u.48xlarge nodes each a host of its own (the hosts and network of
test_topology_scheduling), and the head controller's pass placing them from a recorded
DescribeInstanceTopology answer: network nodes into the tree, CapacityBlockId (one per
UltraServer) into a block. What Slurm then does with jobs is Slurm's; these tests show the
blocks slurmstack gives it are ones it schedules by, and that a node in no block never costs a
job its scheduling in the pool's own partition.

    UltraServer cb-1: n1 n2 n3 n4 (four trn2u.48xlarge, one block)
    UltraServer cb-2: n5
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from botocore.stub import ANY, Stubber

from slurm.conftest import Cluster, make_devices, pinned_version_under_test
from slurm.test_topology_scheduling import (
    LEAVES,
    Fabric,
    HeadOf,
    ec2,
    fabric_of,
    instance_id,
    path_of,
    started,
)
from slurmstack.contract import (
    SLURM_CONF_PATH,
    TOPOLOGY_ASKED_PATH,
    TOPOLOGY_CONF_PATH,
    TOPOLOGY_YAML_PATH,
    block_topology,
    topology_value,
)
from slurmstack.node.controller import place as placing
from slurmstack.node.power.hostlist import expand
from slurmstack.plan import ClusterPlan
from slurmstack.plan.topology import block_pools
from slurmstack.render import head_files
from slurmstack.render.node import pool_ref
from support.stack import plan_of
from support.submissions import SubmittedAlong

pytestmark = [pytest.mark.slurm, pytest.mark.topology]

POOL = "ultra"
BLOCKS = block_topology(POOL)
ULTRASERVER = {"n1": "cb-1", "n2": "cb-1", "n3": "cb-1", "n4": "cb-1", "n5": "cb-2"}


@cache
def ultra_plan() -> ClusterPlan:
    """Two Trn2 UltraServers bought as Capacity Blocks (eight trn2u.48xlarge, four each), for
    the Slurm under test; the tests start five of the nodes."""
    return plan_of(
        {
            "name": "ultra",
            "region": "ap-south-2",
            "availability_zone": "ap-south-2a",
            "head_node": {"instance_type": "c7i.4xlarge"},
            "pools": [
                {
                    "name": POOL,
                    "instance_type": "trn2u.48xlarge",
                    "count": 8,
                    "root_volume": {"size_gib": 512},
                    "capacity": {
                        "type": "capacity_block",
                        "reservation_id": "cr-0a1b2c3d4e5f60718",
                    },
                }
            ],
            "slurm": {"accounting": {"enabled": False}, "version": pinned_version_under_test()},
        }
    )


def no_blocks_for_older_slurm() -> bool:
    """True (after checking it) where the Slurm under test cannot place nodes that join: no
    topology is rendered at all, and no blocks partition."""
    plan = ultra_plan()
    if block_pools(plan):
        return False
    head = head_files(plan)
    assert TOPOLOGY_YAML_PATH not in head and TOPOLOGY_CONF_PATH not in head
    assert "TopologyPlugin" not in head[SLURM_CONF_PATH] and BLOCKS not in head[SLURM_CONF_PATH]
    return True


@pytest.fixture
def fabric(cluster: Cluster) -> Iterator[Fabric]:
    make_devices(cluster, "neuron", 16)  # gres.conf's /dev/neuron[0-15], under the test's root
    yield from fabric_of(cluster, ultra_plan(), POOL)


def answer(hosts: list[str]) -> dict[str, Any]:
    return {
        "Instances": [
            {
                "InstanceId": instance_id(h),
                "InstanceType": "trn2u.48xlarge",
                "NetworkNodes": path_of(h),
                "CapacityBlockId": ULTRASERVER[h],
            }
            for h in hosts
        ]
    }


def controller_pass(
    fabric: Fabric, running: list[str], answered: list[str]
) -> tuple[dict[str, Any] | None, set[str]]:
    """One pass of the head's placement over the ``running`` hosts, EC2 answering for
    ``answered``: what the pass returned, and the instance ids it asked EC2 about."""
    client = ec2()
    asked: set[str] = set()
    client.meta.events.register(
        "provide-client-params.ec2.DescribeInstanceTopology",
        lambda params, **_: asked.update(params.get("InstanceIds", [])),
    )
    config = SimpleNamespace(pools=(pool_ref(ultra_plan(), ultra_plan().pool(POOL)),))
    with Stubber(client) as stub:
        stub.add_response("describe_instance_topology", answer(answered), {"InstanceIds": ANY})
        head = HeadOf(fabric, client)
        result = placing.place(head, config, fabric.observed(running))  # type: ignore[arg-type]
        stub.assert_no_pending_responses()
    return result, asked


def blocks_shown(fabric: Fabric) -> dict[str, list[str]]:
    """`scontrol show topology <blocks>`: block -> its nodes."""
    out = fabric.client("scontrol", "show", "topology", BLOCKS).stdout
    shown = {}
    for line in out.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "BlockName" in fields:
            shown[fields["BlockName"]] = expand(fields.get("Nodes", ""))
    return shown


def test_the_rendered_topology_yaml_lists_the_tree_and_empty_blocks(cluster: Cluster) -> None:
    if no_blocks_for_older_slurm():
        return
    head = head_files(ultra_plan())
    documents = yaml.safe_load(head[TOPOLOGY_YAML_PATH])
    assert [d["topology"] for d in documents] == ["default", BLOCKS]
    block = documents[1]["block"]
    assert block["block_sizes"] == [4]
    assert [b["block"] for b in block["blocks"]] == ["ultra-u1", "ultra-u2"]
    assert "TopologyPlugin" not in head[SLURM_CONF_PATH]  # topology.yaml names the plugins


def test_ultraserver_nodes_go_in_their_blocks_and_the_pool_partition_never_refuses(
    cluster: Cluster, request: pytest.FixtureRequest
) -> None:
    if no_blocks_for_older_slurm():
        return
    fabric: Fabric = request.getfixturevalue("fabric")
    pid = fabric.pid()
    assert blocks_shown(fabric) == {"ultra-u1": [], "ultra-u2": []}
    first = ["n1", "n2", "n3", "n5"]
    started(fabric, first)
    # Before the head placed anything: the pool's partition runs jobs of every size.
    assert len(fabric.run_on("-N4")) == 4
    result, asked = controller_pass(fabric, first, first)
    assert result is not None and result["no_block"] == [] and result["unanswered"] == []
    assert asked == {instance_id(h) for h in first}  # no block held yet: the new nodes only
    name = fabric.name
    assert blocks_shown(fabric) == {
        "ultra-u1": sorted(name(h) for h in ("n1", "n2", "n3")),
        "ultra-u2": [name("n5")],
    }
    records = fabric.records()
    assert records[name("n1")].fields["Topology"] == topology_value(
        path_of("n1"), (BLOCKS, "ultra-u1")
    )
    # The tree keeps them too: the pool's own partition places by it.
    assert fabric.switches()[LEAVES["n1"]] == sorted(name(h) for h in ("n1", "n2"))
    # The blocks partition keeps a job within one UltraServer: three nodes, every time u1's.
    for _ in range(3):
        assert fabric.run_on("-N3", partition=BLOCKS) == sorted(name(h) for h in ("n1", "n2", "n3"))
        ran = fabric.run_on("-N2", "--segment=2", partition=BLOCKS)
        assert len(ran) == 2 and set(ran) <= {name(h) for h in ("n1", "n2", "n3")}, ran
    # The UltraServers are partial (3 of 4, 1 of 4): Slurm's block plugin refuses a job it
    # cannot fit in whole blocks; the pool's own partition runs it on the tree.
    refused = fabric.client(
        "srun", "-p", BLOCKS, "-t", "1", "-N4", "--immediate=10", "true", check=False
    )
    assert refused.returncode != 0, refused
    assert len(fabric.run_on("-N4")) == 4
    # The fourth instance of UltraServer cb-1 joins, users submitting all along: the next pass
    # asks EC2 about it and one node of each block held (no state outside Slurm's records
    # says which UltraServer a block is), and puts it in u1.
    submit = ("sbatch", "-p", POOL, "-t", "1", "-N1", "--wrap", "true")
    with SubmittedAlong(lambda: fabric.client(*submit, check=False)) as along:
        started(fabric, ["n4"])
        result, asked = controller_pass(fabric, [*first, "n4"], [*first, "n4"])
        assert result is not None and result["no_block"] == [], result
    # n4, one node standing for u1, and n5 for u2: three ids, not every node of the pool.
    u1 = {instance_id(h) for h in ("n1", "n2", "n3")}
    assert len(asked) == 3 and instance_id("n4") in asked and instance_id("n5") in asked
    assert len(asked & u1) == 1, asked
    assert instance_id("n4") not in placing_asked(fabric)  # placed: not asked again
    assert blocks_shown(fabric)["ultra-u1"] == sorted(name(h) for h in ("n1", "n2", "n3", "n4"))
    # A whole UltraServer: four nodes, every time u1's.
    for _ in range(2):
        assert fabric.run_on("-N4", partition=BLOCKS) == sorted(
            name(h) for h in LEAVES if h != "n5"
        )
    assert fabric.pid() == pid, "slurmctld restarted"
    assert along.submitted > 0 and along.failures == [], along.failures


def placing_asked(fabric: Fabric) -> dict[str, float]:
    """The controller's memory of instances asked about and still unanswered."""
    path = fabric.cluster.root / "state" / TOPOLOGY_ASKED_PATH.lstrip("/")
    return json.loads(path.read_text()) if path.exists() else {}
