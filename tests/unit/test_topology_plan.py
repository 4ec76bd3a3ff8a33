"""Which pool gets which network topology (slurmstack.rules.topology) and how `plan` shows it
(slurmstack.report.topology): EC2's covered types and their layers, UltraServer blocks, pools
with nothing to place, and the setting that turns it off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from slurmstack.cli import app
from slurmstack.contract import (
    NODE_CONFIG_PATH,
    SLURM_CONF_PATH,
    TOPOLOGY_CONF_PATH,
    TOPOLOGY_YAML_PATH,
    UNPLACED_TOPOLOGY,
)
from slurmstack.loader import load_object
from slurmstack.plan import build_plan
from slurmstack.plan.topology import plan_topology
from slurmstack.render import SLURMD_UNIT_PATH, head_files, pool_files
from slurmstack.report.topology import topology_section
from slurmstack.rules.topology import LAYERS, TopologyKind, pool_topology
from slurmstack.spec import TopologyChoice
from support.examples import EXAMPLE_IDS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("choice", "instance_type", "nodes", "kind", "layers"),
    [
        (TopologyChoice.AUTO, "p5.48xlarge", 16, TopologyKind.TREE, 3),
        (TopologyChoice.AUTO, "p6-b200.48xlarge", 16, TopologyKind.TREE, 4),
        (TopologyChoice.AUTO, "trn2u.48xlarge", 8, TopologyKind.BLOCK, 3),
        (TopologyChoice.BLOCK, "trn2u.48xlarge", 8, TopologyKind.BLOCK, 3),
        (TopologyChoice.TREE, "trn2u.48xlarge", 8, TopologyKind.TREE, 3),
        # Not an UltraServer type here until the catalog has it (slurmstack.rules.topology).
        (TopologyChoice.AUTO, "p6e-gb200.36xlarge", 18, TopologyKind.TREE, 3),
        (TopologyChoice.AUTO, "c7i.4xlarge", 16, TopologyKind.NONE, None),
        (TopologyChoice.AUTO, "p5.48xlarge", 1, TopologyKind.NONE, 3),
        (TopologyChoice.OFF, "p5.48xlarge", 16, TopologyKind.NONE, 3),
    ],
)
def test_each_pool_gets_what_ec2_can_give(
    choice: TopologyChoice, instance_type: str, nodes: int, kind: TopologyKind, layers: int | None
) -> None:
    chosen = pool_topology(choice, instance_type, nodes)
    assert (chosen.kind, chosen.layers) == (kind, layers)
    assert chosen.why
    # A block pool knows its UltraServer's size (four trn2u.48xlarge); no other pool has one.
    assert chosen.block_size == (4 if kind is TopologyKind.BLOCK else None)


def test_the_covered_types_are_the_documented_ones() -> None:
    # Spot checks of the EC2 User Guide's list: GPU training types, Trainium, HPC; not CPU.
    assert {LAYERS[t] for t in ("p4d.24xlarge", "p5en.48xlarge", "trn2.48xlarge")} == {3}
    assert LAYERS["p6-b300.48xlarge"] == 4
    assert "c7i.4xlarge" not in LAYERS and "m7i.large" not in LAYERS


def test_plan_shows_each_pools_topology_and_its_source() -> None:
    data = yaml.safe_load((EXAMPLES / "p5-training.yaml").read_text())
    data["pools"][1]["topology"] = "off"
    loaded = load_object(data)
    assert loaded.spec is not None, loaded.findings
    section = topology_section(build_plan(loaded.spec))
    assert [(p["pool"], p["topology"], p["setting"]) for p in section["pools"]] == [
        ("train", "tree", "auto"),
        ("dev", "none", "off"),
    ]
    assert "Prerequisites for Amazon EC2 topology" in section["source"]
    # Slurm 26.05 (the default) places nodes as they join: topology/tree, the train pool placed.
    assert (section["applied"], section["plugin"]) == (True, "topology/tree")
    assert [p["placed"] for p in section["pools"]] == [True, False]
    data["slurm"] = {"version": "24.11.5"}  # cannot: no topology plugin, and the plan says why
    older = load_object(data)
    assert older.spec is not None, older.findings
    section = topology_section(build_plan(older.spec))
    assert (section["applied"], section["plugin"]) == (False, None)
    assert "per-node topology needs 25.05" in section["slurm"]
    assert not any(p["placed"] for p in section["pools"])
    runner = CliRunner()
    out = runner.invoke(app, ["plan", "examples/p5-training.yaml", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["topology"]["pools"][0]["network_layers"] == 3
    table = runner.invoke(app, ["plan", "examples/p5-training.yaml"]).stdout
    assert "Network topology (from EC2's instance topology)" in table


@pytest.mark.parametrize("stem", EXAMPLE_IDS)
@pytest.mark.parametrize("version", ["24.11.5", "26.05.5"])
def test_the_plugin_never_comes_without_its_topology(stem: str, version: str) -> None:
    """The HyperPod failure issue 27 names: a topology plugin without a topology file. slurm.conf
    has TopologyPlugin exactly when the head's files hold topology.conf, and then every dynamic
    node registers under a switch; with every pool's topology off, neither."""
    for off in (False, True):
        data = yaml.safe_load((EXAMPLES / f"{stem}.yaml").read_text())
        data["slurm"] = {**data.get("slurm", {}), "version": version}
        if off:
            for pool in data["pools"]:
                pool["topology"] = "off"
        loaded = load_object(data)
        assert loaded.spec is not None, loaded.findings
        plan = build_plan(loaded.spec)
        head = head_files(plan)
        plugin = "TopologyPlugin=topology/tree" in head[SLURM_CONF_PATH]
        assert plugin == (TOPOLOGY_CONF_PATH in head) == plan_topology(plan).tree
        assert plugin == (version == "26.05.5" and not off)
        for pool in plan.pools:
            unit = pool_files(plan, pool)[SLURMD_UNIT_PATH]
            assert (f"Topology={UNPLACED_TOPOLOGY}" in unit) == plugin


def ultraserver_definition(version: str = "26.05.5") -> dict:
    return {
        "name": "ultra",
        "region": "ap-south-2",
        "availability_zone": "ap-south-2a",
        "head_node": {"instance_type": "c7i.4xlarge"},
        "pools": [
            {
                "name": "ultra",
                "instance_type": "trn2u.48xlarge",
                "count": 6,
                "max_count": 10,
                "capacity": {"type": "capacity_block", "reservation_id": "cr-0a1b2c3d4e5f60718"},
                "root_volume": {"size_gib": 512},
            },
            {"name": "p5", "instance_type": "p6-b200.48xlarge", "count": 2},
        ],
        "slurm": {"version": version},
    }


def test_an_ultraserver_pool_gets_its_blocks_beside_the_tree() -> None:
    """topology.yaml instead of topology.conf: the tree as "default" (the cluster's, with the
    CLOUD nodes under the unplaced leaf), and the pool's block topology with one empty block
    per UltraServer it can hold (ten nodes, four per UltraServer: three); a second partition
    over the pool's nodes schedules by it; the head's controller knows the blocks; plan says
    so. No TopologyPlugin line: topology.yaml names each topology's plugin."""
    loaded = load_object(ultraserver_definition())
    assert loaded.spec is not None, loaded.findings
    plan = build_plan(loaded.spec)
    head = head_files(plan)
    assert TOPOLOGY_CONF_PATH not in head
    documents = yaml.safe_load(head[TOPOLOGY_YAML_PATH])
    tree, blocks = documents
    assert (tree["topology"], tree["cluster_default"]) == ("default", True)
    assert tree["tree"]["switches"][1] == {"switch": "slurmstack-unplaced", "nodes": "ultra-e[1-4]"}
    assert (blocks["topology"], blocks["cluster_default"]) == ("ultra_blocks", False)
    assert blocks["block"] == {
        "block_sizes": [4],
        "blocks": [{"block": "ultra-u1"}, {"block": "ultra-u2"}, {"block": "ultra-u3"}],
    }
    conf = head[SLURM_CONF_PATH]
    assert "TopologyPlugin" not in conf
    partitions = [line for line in conf.splitlines() if line.startswith("PartitionName=ultra")]
    assert partitions[1].startswith("PartitionName=ultra_blocks Nodes=ultra_nodes Default=NO")
    assert partitions[1].endswith("Topology=ultra_blocks")
    assert "Topology=" not in partitions[0]  # the pool's own partition: the tree
    config = json.loads(head[NODE_CONFIG_PATH])
    ref = next(p for p in config["pools"] if p["name"] == "ultra")
    assert (ref["block_topology"], ref["blocks"]) == (
        "ultra_blocks",
        ["ultra-u1", "ultra-u2", "ultra-u3"],
    )
    p5 = next(p for p in config["pools"] if p["name"] == "p5")
    assert "blocks" not in p5 and p5["topology"] is True
    section = topology_section(plan)
    assert section["plugin"] == "topology/tree + topology/block (topology.yaml)"
    assert section["pools"][0]["blocks"] == {
        "partition": "ultra_blocks",
        "instances_per_block": 4,
        "count": 3,
    }
    assert section["pools"][1]["blocks"] is None
    # Every node registers under the tree's unplaced leaf, the UltraServer pool's too.
    for pool in plan.pools:
        assert f'Topology={UNPLACED_TOPOLOGY}"' in pool_files(plan, pool)[SLURMD_UNIT_PATH]


def test_an_ultraserver_pool_on_a_slurm_without_per_node_topology_gets_none() -> None:
    loaded = load_object(ultraserver_definition("24.11.5"))
    assert loaded.spec is not None, loaded.findings
    head = head_files(build_plan(loaded.spec))
    assert TOPOLOGY_YAML_PATH not in head and TOPOLOGY_CONF_PATH not in head
    assert "ultra_blocks" not in head[SLURM_CONF_PATH]
