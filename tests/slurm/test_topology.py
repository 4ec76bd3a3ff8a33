"""The topology slurmstack renders from EC2's answers (slurmstack.node.controller.topology), read
by the real slurmctld: the g6e example's head configuration (its elastic nodes are in
slurm.conf from the start) with TopologyPlugin=topology/tree and a topology.conf from a recorded
answer of three layers, one network node shared by a 3- and a 4-layer path, and nodes EC2
placed nowhere (the l4 pool's, and elastic nodes not launched). slurmctld must take every
switch as written and reach every node it knows through one root."""

from __future__ import annotations

import re

import pytest

from slurm.conftest import Cluster, example_plan, write_config
from slurm.slurm_root import version_under_test
from slurmstack import slurm_releases
from slurmstack.contract import TASK_PROLOG_PATH
from slurmstack.node.controller.topology import (
    ROOT_SWITCH,
    UNPLACED_SWITCH,
    placement_updates,
    tree_topology,
)
from slurmstack.node.power.hostlist import expand
from slurmstack.render import head_files, pool_files

pytestmark = pytest.mark.slurm

PATHS = {
    "l40s-e1": ["nn-top", "nn-spine1", "nn-leaf1"],
    "l40s-e2": ["nn-top", "nn-spine1", "nn-leaf1"],
    "l40s-e3": ["nn-top", "nn-spine1", "nn-leaf2"],
    "l40s-e4": ["nn-top", "nn-spine2", "nn-leaf3", "nn-under3"],
    "l40s-e5": ["nn-top", "nn-spine2", "nn-leaf3"],
}


def shown(cluster: Cluster) -> dict[str, dict[str, str]]:
    """`scontrol show topology`, one record per switch."""
    out = cluster.scontrol("show", "topology").stdout
    records = {}
    for line in out.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "SwitchName" in fields:
            records[fields["SwitchName"]] = fields
    return records


def test_slurmctld_takes_the_tree_and_reaches_every_node(cluster: Cluster) -> None:
    plan = example_plan("g6e-inference-spot")
    files = head_files(plan)
    write_config(cluster, files, pool_files(plan, plan.pools[0])[TASK_PROLOG_PATH])
    # Every node slurm.conf names is given, those without an answer with none: a node missing
    # from topology.conf is one no switch reaches (slurmctld warns, and no job spans it).
    names = [n for pool in plan.elastic_pools for n in expand(pool.elastic_node_names)]
    tree = tree_topology({name: PATHS.get(name, []) for name in names})
    (cluster.root / "etc" / "topology.conf").write_text(tree.text())
    with cluster.conf.open("a") as conf:
        conf.write("TopologyPlugin=topology/tree\n")
    cluster.start_munged()
    cluster.start_slurmctld()
    switches = shown(cluster)
    assert set(switches) == {
        "nn-top",
        "nn-spine1",
        "nn-spine2",
        "nn-leaf1",
        "nn-leaf2",
        "nn-leaf3",
        "nn-leaf3-nodes",
        "nn-under3",
        UNPLACED_SWITCH,
        ROOT_SWITCH,
    }, switches
    # Leaves at level 0 with their nodes; the root above everything.
    # (24.11 shows a switch's nodes as written, 26.05 as a ranged hostlist.)
    assert switches["nn-leaf1"]["Level"] == "0"
    assert expand(switches["nn-leaf1"]["Nodes"]) == ["l40s-e1", "l40s-e2"]
    assert sorted(expand(switches[UNPLACED_SWITCH]["Nodes"])) == [
        "l4-e1",
        "l4-e2",
        "l4-e3",
        "l4-e4",
        "l40s-e6",
        "l40s-e7",
    ]
    assert switches["nn-leaf3"]["Switches"] == "nn-leaf3-nodes,nn-under3"
    levels = {name: int(s["Level"]) for name, s in switches.items()}
    assert levels[ROOT_SWITCH] == max(levels.values())
    assert sorted(expand(switches[ROOT_SWITCH]["Nodes"])) == sorted(names)
    log = (cluster.root / "log" / "slurmctld.log").read_text()
    assert "no switch can reach all nodes" not in log and "both child switches" not in log, log
    # The warning Slurm still gives names no node: it counts the slots of dynamic nodes yet to
    # register (MaxNodeCount), which a topology.conf cannot name; they take theirs when they
    # join (issue 27's next part: per-node topology on 25.05 and later).
    lacking = re.findall(r"switches lack access to \d+ nodes: (.*)$", log, re.MULTILINE)
    assert all(not named.strip() for named in lacking), lacking


def test_a_node_takes_its_place_in_the_tree_without_a_restart(cluster: Cluster) -> None:
    """What the controller will use for nodes that join (issue 27's next part): Slurm 25.05 and
    later take a node's switches by `scontrol update nodename=X topology=<name>:<top>:..:<leaf>`
    (scontrol(1), "Topology"), making the switches it names; slurmctld keeps running (same pid).
    The older leg (24.11) has no such update: there, joining nodes need a reconfigure."""
    plan = example_plan("g6e-inference-spot")
    write_config(cluster, head_files(plan), pool_files(plan, plan.pools[0])[TASK_PROLOG_PATH])
    names = [n for pool in plan.elastic_pools for n in expand(pool.elastic_node_names)]
    # At first EC2 placed nothing: every node under the unplaced leaf.
    (cluster.root / "etc" / "topology.conf").write_text(
        tree_topology(dict.fromkeys(names, ())).text()
    )
    with cluster.conf.open("a") as conf:
        conf.write("TopologyPlugin=topology/tree\n")
    cluster.start_munged()
    cluster.start_slurmctld()
    pid = (cluster.root / "run" / "slurmctld.pid").read_text().strip()
    # The value the controller's placement_updates gives for the node's answer.
    (value,) = placement_updates({"l40s-e1": PATHS["l40s-e1"]}, {})
    update = cluster.scontrol("update", "nodename=l40s-e1", f"topology={value}", check=False)
    version = version_under_test()
    assert version is not None
    if tuple(map(int, slurm_releases.line_of(version).split("."))) < (25, 5):
        assert update.returncode != 0, update
        return
    assert update.returncode == 0, update.stderr + cluster.logs()
    switches = shown(cluster)
    assert expand(switches["nn-leaf1"]["Nodes"]) == ["l40s-e1"], switches
    assert "nn-spine1" in switches and "nn-top" in switches
    assert "l40s-e1" not in expand(switches[UNPLACED_SWITCH]["Nodes"])
    assert (cluster.root / "run" / "slurmctld.pid").read_text().strip() == pid
