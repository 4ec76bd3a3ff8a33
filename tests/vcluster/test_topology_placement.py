"""Topology from EC2 on the virtual cluster (issue 27): a cluster of its own whose nodes run the
version of record (Debian's build of 26.05.5: per-node topology needs 25.05 or later), a pool
of five g6e nodes (a type EC2 reports three network layers for) and one c7i node (a type it
reports none for).

What is real: the rendered slurm.conf (TopologyPlugin=topology/tree) and topology.conf, every
dynamic slurmd registering under the unplaced leaf as its rendered unit says, the head's control
pass (`slurmstack-node control`, as its timer runs it) asking EC2's API through botocore over
the fabric, through the head's metadata firewall, and its `scontrol update` of each leaf, and
slurmctld's scheduling. Stand-in: "instance-topology" (moto has no DescribeInstanceTopology;
harness/instance_topology.py answers it in EC2's shape from the layout below).

    top - spine -+- leaf-a: two g6e nodes
                 |- leaf-b: two g6e nodes
                 `- leaf-c: one g6e node        (the c7i node: under slurmstack-unplaced)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmstack.contract import (
    STATE_SAVE_LOCATION,
    UNPLACED_SWITCH,
    UNPLACED_TOPOLOGY,
    topology_value,
)
from slurmstack.node.controller.full_save import CORE_STATE_FILES
from slurmstack.node.power.hostlist import expand
from support.submissions import SubmittedAlong
from vcluster.conftest import require_host
from vcluster.harness import VirtualCluster, wait_until
from vcluster.harness.elastic import ElasticNodes, prepare_head
from vcluster.harness.instance_topology import Leaf
from vcluster.harness.node import Node
from vcluster.harness.node_slurm import assert_nodes_run, record

pytestmark = [pytest.mark.vcluster, pytest.mark.topology]

DEFINITION = Path(__file__).resolve().parent / "definitions" / "topology.yaml"
LEAVES = tuple(Leaf(("nn-top", "nn-spine", f"nn-leaf-{name}"), size=2) for name in ("a", "b", "c"))
PLACED_POOL = "gpu"


@pytest.fixture(scope="module")
def cluster() -> Iterator[VirtualCluster]:
    slurm = record()
    require_host(slurm)

    def lay_out(c: VirtualCluster) -> None:
        c.aws.topology.lay_out(LEAVES)

    with VirtualCluster(
        DEFINITION, keep=os.environ.get("VCLUSTER_KEEP") == "1", before_boot=lay_out,
        slurm=slurm,
    ) as c:  # fmt: skip
        prepare_head(c)
        yield c
        print(f"\ntopology virtual cluster timings (s): {c.timings}")
    assert c.leftovers() == [], "the topology cluster's cleanup left these behind"


def head(cluster: VirtualCluster) -> Node:
    assert cluster.head is not None
    return cluster.head


def control(cluster: VirtualCluster) -> dict:
    """One pass of the head's control loop, as its timer runs it; its JSON."""
    return json.loads(head(cluster).run("slurmstack-node", "control", timeout=120).stdout)


def switches(cluster: VirtualCluster) -> dict[str, list[str]]:
    """`scontrol show topology`: switch -> every node below it."""
    out = head(cluster).run("scontrol", "show", "topology").stdout
    shown = {}
    for line in out.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "SwitchName" in fields:
            shown[fields["SwitchName"]] = sorted(expand(fields.get("Nodes", "")))
    return shown


def expected_leaves(cluster: VirtualCluster) -> dict[str, list[str]]:
    """Leaf switch -> the Slurm nodes the stand-in placed under it (what EC2 answered)."""
    leaves: dict[str, list[str]] = {}
    for node in cluster.pool_nodes(PLACED_POOL):
        path = cluster.aws.topology.placement(node.instance_id)
        assert path is not None, f"EC2 was never asked about {node.label()}"
        leaves.setdefault(path[-1], []).append(cluster.slurm_name(node))
    return {leaf: sorted(names) for leaf, names in leaves.items()}


def leaf_of(cluster: VirtualCluster, name: str) -> str:
    return next(leaf for leaf, names in expected_leaves(cluster).items() if name in names)


def elastic_names(cluster: VirtualCluster) -> list[str]:
    return sorted(n for n, r in cluster.node_records().items() if "CLOUD" in r["State"])


def run_on(cluster: VirtualCluster, *args: str) -> list[str]:
    """The nodes an srun with ``args`` ran on (never the elastic node: its own scenario)."""
    elastic = elastic_names(cluster)
    exclude = ("-x", ",".join(elastic)) if elastic else ()
    out = head(cluster).run(
        "srun", "-p", PLACED_POOL, "-t", "2", *exclude, *args,
        "sh", "-c", "echo $SLURMD_NODENAME", timeout=120,
    ).stdout  # fmt: skip
    return sorted(set(out.split()))


def slurmctld_pid(cluster: VirtualCluster) -> str:
    return head(cluster).run("pgrep", "-o", "-x", "slurmctld").stdout.strip()


def reap(cluster: VirtualCluster, name: str) -> None:
    """The reaper, as its timer runs it (with a grace period a test can wait out), until it
    deletes ``name``: slurmctld must first mark the dead node DOWN (SlurmdTimeout)."""

    def deleted() -> bool:
        out = head(cluster).run("slurmstack-node", "reap", "--grace", "1").stdout
        return name in json.loads(out)["deleted"]

    wait_until(deleted, f"the reaper to delete {name}", timeout=90, poll=2)
    assert name not in cluster.node_records()


def placed(cluster: VirtualCluster) -> None:
    """Every node of the placed pool under its leaf: the control pass until it is (a pass
    places every node EC2 answered for; a node registering later waits for the next)."""

    def done() -> bool:
        control(cluster)
        shown = switches(cluster)
        return all(shown.get(leaf) == names for leaf, names in expected_leaves(cluster).items())

    wait_until(done, "every placed node under its leaf", timeout=60, poll=2)


def test_the_head_places_each_node_under_the_network_nodes_ec2_answers(
    cluster: VirtualCluster,
) -> None:
    assert_nodes_run(cluster)  # 26.05.5, Debian's build, on every node
    # The head's boot asked slurmctld for a full state save: every file 26.05 needs to start
    # again is there already, not only after its first periodic save (full_save.py).
    saved = head(cluster).run("ls", STATE_SAVE_LOCATION).stdout.split()
    assert set(CORE_STATE_FILES) <= set(saved), saved
    conf = head(cluster).run("scontrol", "show", "config").stdout
    assert "topology/tree" in conf
    gpu = {cluster.slurm_name(n): n for n in cluster.pool_nodes(PLACED_POOL)}
    cpu = [cluster.slurm_name(n) for n in cluster.pool_nodes("cpu")]
    records = cluster.node_records()
    calls_before = len(cluster.aws.topology.calls)
    if all(records[name].get("Topology") == UNPLACED_TOPOLOGY for name in gpu):
        # Every node registered under the unplaced leaf, as its slurmd unit says.
        assert set(switches(cluster)[UNPLACED_SWITCH]) == {*gpu, *cpu, *elastic_names(cluster)}
    result = control(cluster)
    assert set(result["topology"]["placed"]) == {
        topology_value(leaf.network_nodes) for leaf in LEAVES
    }, result
    # One call for the five joining instances; the c7i node's pool is not asked about.
    calls = cluster.aws.topology.calls[calls_before:]
    assert [sorted(c) for c in calls] == [sorted(n.instance_id for n in gpu.values())]
    shown = switches(cluster)
    leaves = expected_leaves(cluster)
    assert sorted(len(names) for names in leaves.values()) == [1, 2, 2]
    for leaf, names in leaves.items():
        assert shown[leaf] == names, shown
    assert shown[UNPLACED_SWITCH] == sorted([*cpu, *elastic_names(cluster)])
    records = cluster.node_records()
    for name, node in gpu.items():
        path = cluster.aws.topology.placement(node.instance_id)
        assert path is not None
        assert records[name]["Topology"] == topology_value(path)
    # Placed nodes are not asked about again.
    assert control(cluster).get("topology") is None
    assert len(cluster.aws.topology.calls) == calls_before + 1


def test_switches_1_keeps_a_job_in_one_leaf_and_a_larger_one_takes_the_fewest(
    cluster: VirtualCluster,
) -> None:
    placed(cluster)
    leaves = expected_leaves(cluster)
    for _ in range(3):
        ran = run_on(cluster, "-N2", "--switches=1")
        assert len(ran) == 2 and len({leaf_of(cluster, n) for n in ran}) == 1, ran
    # Three nodes: no leaf has three, so two leaves, never three.
    for _ in range(3):
        ran = run_on(cluster, "-N3")
        assert len(ran) == 3 and len({leaf_of(cluster, n) for n in ran}) == 2, ran
    # One of the two-node leaves busy: --switches=1 takes the other.
    pairs = [names for names in leaves.values() if len(names) == 2]
    busy = head(cluster).run(
        "sbatch", "--parsable", "-p", PLACED_POOL, "-t", "5", "-N2", "--exclusive",
        "-w", ",".join(pairs[0]), "--wrap", "sleep 300",
    ).stdout.strip()  # fmt: skip
    try:
        wait_until(
            lambda: "RUNNING" in head(cluster).run("squeue", "-h", "-j", busy, "-o", "%T").stdout,
            "the busy job running",
            timeout=60,
        )
        assert run_on(cluster, "-N2", "--switches=1") == pairs[1]
    finally:
        head(cluster).run("scancel", busy)
    wait_until(
        lambda: not head(cluster).run("squeue", "-h", "-j", busy).stdout.strip(),
        "the busy job gone",
        timeout=60,
    )


def test_nodes_leaving_and_joining_keep_the_tree_with_no_restart_and_no_failed_submission(
    cluster: VirtualCluster,
) -> None:
    placed(cluster)
    pid = slurmctld_pid(cluster)
    # Not the elastic node: a queue longer than the static nodes would resume it (its own
    # scenario).
    elastic = ",".join(elastic_names(cluster))
    submit = ("sbatch", "-p", PLACED_POOL, "-t", "1", "-N1", "-x", elastic, "--wrap", "true")
    with SubmittedAlong(lambda: head(cluster).run(*submit, check=False)) as along:
        # A node of a full leaf leaves (its instance dies); the group launches another,
        # which joins under the unplaced leaf and the next pass places it where EC2 says.
        leaves = expected_leaves(cluster)
        full = next(names for names in leaves.values() if len(names) == 2)
        victim = next(n for n in cluster.pool_nodes(PLACED_POOL) if cluster.slurm_name(n) in full)
        gone = cluster.slurm_name(victim)
        cluster.kill(victim)
        new = cluster.replace(victim)
        new_name = cluster.slurm_name(new)
        cluster.wait_registered()
        assert cluster.node_records()[new_name]["Topology"] == UNPLACED_TOPOLOGY
        calls_before = len(cluster.aws.topology.calls)
        result = control(cluster)
        assert [n for names in result["topology"]["placed"].values() for n in names] == [
            new_name
        ], result
        assert cluster.aws.topology.calls[calls_before:] == [[new.instance_id]]
        # The reaper deletes the dead node's record once slurmctld marked it DOWN and EC2 says
        # its instance is gone.
        reap(cluster, gone)
        shown = switches(cluster)
        for leaf, names in expected_leaves(cluster).items():
            assert shown[leaf] == names, shown
        assert gone not in shown["nn-top"]
        assert len(run_on(cluster, "-N5")) == 5
    assert slurmctld_pid(cluster) == pid, "slurmctld restarted"
    assert along.submitted > 0 and along.failures == [], along.failures


def test_ec2_throttling_leaves_scheduling_working_and_a_later_pass_places(
    cluster: VirtualCluster,
) -> None:
    placed(cluster)
    victim = cluster.pool_nodes(PLACED_POOL)[0]
    cluster.kill(victim)
    cluster.aws.topology.refuse()
    try:
        new = cluster.replace(victim)
        new_name = cluster.slurm_name(new)
        cluster.wait_registered()
        reap(cluster, cluster.slurm_name(victim))
        result = control(cluster)
        assert "RequestLimitExceeded" in result["topology"]["error"], result
        assert cluster.node_records()[new_name]["Topology"] == UNPLACED_TOPOLOGY
        # Every node reachable: a job over the whole pool runs, and --switches=1 too.
        assert new_name in run_on(cluster, "-N5")
        assert len(run_on(cluster, "-N2", "--switches=1")) == 2
    finally:
        cluster.aws.topology.answer_again()
    # EC2 answering again: the next pass places it (a failed call is not remembered).
    result = control(cluster)
    assert [n for names in result["topology"]["placed"].values() for n in names] == [new_name]
    shown = switches(cluster)
    for leaf, names in expected_leaves(cluster).items():
        assert shown[leaf] == names, shown


def test_an_elastic_node_is_placed_while_it_runs_and_unplaced_when_it_powers_down(
    cluster: VirtualCluster,
) -> None:
    """The pool's CLOUD node is listed under the unplaced leaf in topology.conf; resumed for a
    job, the next pass places it where EC2 says; powered down after its idle minute, Slurm puts
    it back where topology.conf has it (26.05's reset_node_topology at power down), so the next
    instance under that name, anywhere in EC2's network, is asked about again."""
    placed(cluster)
    nodes = ElasticNodes(cluster)
    (name,) = elastic_names(cluster)
    # topology.conf's place: scontrol prints no Topology= for a node that has only that one.
    assert "Topology" not in cluster.node_records()[name]
    assert name in switches(cluster)[UNPLACED_SWITCH]
    job = (
        head(cluster)
        .run("sbatch", "--parsable", "-p", PLACED_POOL, "-w", name, "--wrap", "sleep 15")
        .stdout.strip()
    )

    def running() -> bool:
        nodes.sync()
        out = head(cluster).run("squeue", "-h", "-j", job, "-o", "%T").stdout
        return "RUNNING" in out

    wait_until(running, f"job {job} running on {name}", timeout=180, poll=1)
    node = nodes.named(name)
    assert node is not None
    result = control(cluster)
    assert [n for names in result["topology"]["placed"].values() for n in names] == [name]
    path = cluster.aws.topology.placement(node.instance_id)
    assert path is not None
    assert cluster.node_records()[name]["Topology"] == topology_value(path)
    assert name in switches(cluster)[path[-1]]

    def powered_down() -> dict[str, str] | None:
        nodes.sync()
        record = cluster.node_records().get(name, {})
        return record if "POWERED_DOWN" in record.get("State", "") else None

    record = wait_until(powered_down, f"{name} powered down", timeout=60 + 120, poll=2)
    assert "Topology" not in record, record
    assert name in switches(cluster)[UNPLACED_SWITCH]
    assert name not in switches(cluster)[path[-1]]
