"""The topology slurmstack renders from EC2's answers (slurmstack.node.controller.topology), read
by the real slurmctld: the g6e example's head configuration (its elastic nodes are in
slurm.conf from the start) with TopologyPlugin=topology/tree and a topology.conf from a recorded
answer of three layers, one network node shared by a 3- and a 4-layer path, and nodes EC2
placed nowhere (the l4 pool's, and elastic nodes not launched). slurmctld must take every
switch as written and reach every node it knows through one root."""

from __future__ import annotations

import re
import time
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest
from botocore.stub import Stubber

from slurm.conftest import (
    Cluster,
    example_plan,
    pinned_version_under_test,
    run,
    wait_for,
    write_config,
)
from slurm.slurm_root import version_under_test
from slurm.test_dynamic_node import node_fields, slurmd_command
from slurmstack import slurm_releases
from slurmstack.contract import (
    ROOT_SWITCH,
    TASK_PROLOG_PATH,
    TOPOLOGY_CONF_PATH,
    UNPLACED_SWITCH,
    UNPLACED_TOPOLOGY,
    node_name,
    node_name_prefix,
    topology_value,
)
from slurmstack.node.controller.observe import Instance, Observed
from slurmstack.node.controller.place import place
from slurmstack.node.controller.topology import placement_updates, tree_topology
from slurmstack.node.power.hostlist import expand
from slurmstack.node.slurm import NodeRecord
from slurmstack.plan.topology import plan_topology
from slurmstack.render import SLURMD_UNIT_PATH, head_files, pool_files
from slurmstack.render.node import pool_ref

pytestmark = pytest.mark.slurm

PATHS = {
    "l40s-e1": ["nn-top", "nn-spine1", "nn-leaf1"],
    "l40s-e2": ["nn-top", "nn-spine1", "nn-leaf1"],
    "l40s-e3": ["nn-top", "nn-spine1", "nn-leaf2"],
    "l40s-e4": ["nn-top", "nn-spine2", "nn-leaf3", "nn-under3"],
    "l40s-e5": ["nn-top", "nn-spine2", "nn-leaf3"],
}


def plugin_on(cluster: Cluster) -> None:
    """TopologyPlugin=topology/tree, which the rendered slurm.conf has from 25.05 on (older
    releases cannot place nodes that join: slurmstack.rules.topology) and these tests want on
    the older leg too, to read its topology.conf."""
    if "TopologyPlugin=topology/tree" not in cluster.conf.read_text():
        with cluster.conf.open("a") as conf:
            conf.write("TopologyPlugin=topology/tree\n")


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
    plugin_on(cluster)
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
    plugin_on(cluster)
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


class HeadOf:
    """The head's context as place() uses it, over this test's cluster: EC2 (stubbed with a
    recorded answer), the state directory, and the real scontrol."""

    def __init__(self, cluster: Cluster, client: object) -> None:
        self.cluster = cluster
        self.aws = SimpleNamespace(ec2=lambda: client)

    def path(self, path: str) -> Path:
        return self.cluster.root / "state" / path.lstrip("/")

    def bounded(self, _seconds: float, *cmd: str, check: bool = False):
        return run(list(cmd), self.cluster, check=check)


def test_a_joining_node_is_placed_by_the_controller_without_a_restart(cluster: Cluster) -> None:
    """The whole path on the real daemons: the rendered slurm.conf, topology.conf and slurmd
    unit; a dynamic node registers under the unplaced leaf (its slurmd's --conf), where jobs
    still reach it; the controller's pass asks EC2 (a recorded answer) and moves it under its
    network nodes; slurmctld keeps running (same pid). On a release without per-node topology
    (the older leg) nothing of it is rendered: Slurm schedules without topology."""
    plan = example_plan("cpu-hpc")
    pool = plan.pool("mpi")  # hpc7a.96xlarge: EC2 reports 3 network layers
    files = pool_files(plan, pool)
    head = head_files(plan)
    write_config(cluster, head, files[TASK_PROLOG_PATH])
    unit = files[SLURMD_UNIT_PATH]
    if not plan_topology(plan).tree:
        assert slurm_releases.version_key(pinned_version_under_test()) < (25, 5)
        assert "TopologyPlugin" not in head["/etc/slurm/slurm.conf"]
        assert TOPOLOGY_CONF_PATH not in head and "Topology=" not in unit
        return
    cluster.start_munged()
    cluster.start_slurmctld()
    pid = (cluster.root / "run" / "slurmctld.pid").read_text().strip()
    name = node_name(node_name_prefix(pool.name), "10.42.7.19")
    cluster.start_slurmd(slurmd_command(unit, cluster, name), name)
    wait_for(
        lambda: node_fields(cluster, name).get("State", "").startswith("IDLE"),
        f"node {name} idle",
        cluster,
    )
    assert node_fields(cluster, name)["Topology"] == UNPLACED_TOPOLOGY
    assert expand(shown(cluster)[UNPLACED_SWITCH]["Nodes"]) == [name]
    # Under the unplaced leaf a job runs on it (a node no switch lists would get none).
    job = run(["srun", "-N1", "-w", name, "hostname"], cluster)
    assert job.returncode == 0, job.stderr
    record = NodeRecord.parse(cluster.scontrol("show", "node", "-o", name).stdout.strip())
    observed = Observed(
        time.time(),
        (record,),
        frozenset(),
        aws=True,
        instances=(Instance("i-0aaa", record.address, pool.name, "running"),),
    )
    config = SimpleNamespace(pools=(pool_ref(plan, pool),))
    assert config.pools[0].topology
    client = boto3.client("ec2", region_name="eu-north-1", aws_access_key_id="x",
                          aws_secret_access_key="x")  # fmt: skip
    path = ["nn-top", "nn-spine1", "nn-leaf1"]
    with Stubber(client) as stub:
        stub.add_response(
            "describe_instance_topology",
            {"Instances": [{"InstanceId": "i-0aaa", "NetworkNodes": path}]},
            {"InstanceIds": ["i-0aaa"]},
        )
        result = place(HeadOf(cluster, client), config, observed)  # type: ignore[arg-type]
    assert result == {"placed": {topology_value(path): [name]}, "unanswered": []}, cluster.logs()
    assert node_fields(cluster, name)["Topology"] == topology_value(path)
    switches = shown(cluster)
    assert expand(switches["nn-leaf1"]["Nodes"]) == [name]
    assert not expand(switches[UNPLACED_SWITCH].get("Nodes", ""))
    assert (cluster.root / "run" / "slurmctld.pid").read_text().strip() == pid
    job = run(["srun", "-N1", "--switches=1", "hostname"], cluster)
    assert job.returncode == 0, job.stderr
