"""Scheduling with the topology the head keeps (issue 27), on the real daemons of the version of
record: one slurmctld and five dynamic nodes of the cpu-hpc example's mpi pool (hpc7a: EC2
reports three network layers), each a host of its own (network and UTS namespaces,
ha_namespaces.py), started as the rendered slurmd unit starts them; the head controller's pass
(slurmstack.node.controller.place) places them from a recorded DescribeInstanceTopology answer
(botocore's Stubber, EC2's own service model). What Slurm then does with jobs is Slurm's:
these tests show that the topology slurmstack gives it is one it schedules by.

The virtual cluster's own topology scenarios wait for it to run a Slurm that places nodes that
join (25.05 or later: issue 23); on the older leg (24.11) nothing of the topology is rendered,
which each test checks instead.

    ctl (10.251.0.1) ---+                 t (top)
    n1 .. n5 (.11-.15) -+-- bridge        `- s1 (spine)
                                             |- leaf-a: n1 n2
                                             |- leaf-b: n3 n4
                                             `- leaf-c: n5
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from slurm.conftest import Cluster, localize, pinned_version_under_test, write_config
from slurm.ha_namespaces import HostNetwork, host_command, make_network
from slurmstack.contract import (
    SLURMCTLD_PORT,
    TASK_PROLOG_PATH,
    TOPOLOGY_CONF_PATH,
    UNPLACED_SWITCH,
    UNPLACED_TOPOLOGY,
    node_name,
    node_name_prefix,
    topology_value,
)
from slurmstack.node.controller import place as placing
from slurmstack.node.controller.observe import Instance, Observed
from slurmstack.node.power.hostlist import expand
from slurmstack.node.slurm import NodeRecord
from slurmstack.plan import ClusterPlan
from slurmstack.plan.topology import plan_topology
from slurmstack.render import SLURMD_UNIT_PATH, head_files, pool_files
from slurmstack.render.node import pool_ref
from support.stack import example, plan_of
from support.submissions import SubmittedAlong

pytestmark = [pytest.mark.slurm, pytest.mark.topology]

POOL = "mpi"
CONTROLLER = "ctl"
ADDRESSES = {CONTROLLER: "10.251.0.1", **{f"n{i}": f"10.251.0.{10 + i}" for i in range(1, 6)}}
TOP, SPINE = "nn-top", "nn-spine1"
LEAVES = {"n1": "leaf-a", "n2": "leaf-a", "n3": "leaf-b", "n4": "leaf-b", "n5": "leaf-c"}
WAIT = 90  # seconds: a node registering, a job ending, on a busy 2-core machine


@cache
def topology_plan() -> ClusterPlan:
    """cpu-hpc without accounting (no slurmdbd here), for the Slurm under test."""
    definition = example("cpu-hpc")
    slurm = definition.setdefault("slurm", {})
    slurm["accounting"] = {"enabled": False}
    slurm["version"] = pinned_version_under_test()
    return plan_of(definition)


def rendered_for_older_slurm() -> bool:
    """True (after checking it) where the Slurm under test cannot place nodes that join, so
    nothing of the topology is rendered and Slurm schedules without it."""
    plan = topology_plan()
    if plan_topology(plan).tree:
        return False
    head = head_files(plan)
    assert "TopologyPlugin" not in head["/etc/slurm/slurm.conf"]
    assert TOPOLOGY_CONF_PATH not in head
    assert "Topology=" not in pool_files(plan, plan.pool(POOL))[SLURMD_UNIT_PATH]
    return True


def instance_id(host: str) -> str:
    return f"i-0{host}"


def path_of(host: str) -> list[str]:
    return [TOP, SPINE, LEAVES[host]]


@dataclass
class Fabric:
    cluster: Cluster
    network: HostNetwork
    nodes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    plan: ClusterPlan = field(default_factory=topology_plan)
    pool: str = POOL  # the pool whose nodes the hosts run

    def name(self, host: str) -> str:
        return node_name(node_name_prefix(self.pool), ADDRESSES[host])

    def host_of(self, name: str) -> str:
        return next(h for h in LEAVES if self.name(h) == name)

    def client(self, *cmd: str, check: bool = True, timeout: float = 120) -> Any:
        """A Slurm command on the controller's host."""
        full = [*self.network.enter(CONTROLLER), *localize(list(cmd))]
        result = subprocess.run(
            full, env=self.cluster.env(), capture_output=True, text=True, timeout=timeout
        )
        if check and result.returncode != 0:
            raise AssertionError(f"{cmd}: {result.stdout}{result.stderr}\n{self.cluster.logs()}")
        return result

    def start_controller(self) -> None:
        cmd = host_command(
            self.network,
            CONTROLLER,
            CONTROLLER,
            {},
            ["slurmctld", "-D", "-f", str(self.cluster.conf)],
        )
        proc = self.cluster.spawn(cmd, "slurmctld.out")
        wait(lambda: proc.poll() is None and self.client("scontrol", "ping", check=False).returncode == 0,
             "slurmctld answers", self)  # fmt: skip

    def pid(self) -> str:
        return (self.cluster.root / "run" / "slurmctld.pid").read_text().strip()

    def start_node(self, host: str) -> str:
        """The pool's slurmd as its rendered unit starts it, on ``host``."""
        unit = pool_files(self.plan, self.plan.pool(self.pool))[SLURMD_UNIT_PATH]
        line = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
        name = self.name(host)
        server = f"${{SLURMSTACK_HEAD_ADDRESS}}:{SLURMCTLD_PORT}"
        line = line.removeprefix("ExecStart=").replace(
            server, f"{ADDRESSES[CONTROLLER]}:{self.cluster.ctld_port}"
        )
        line = line.replace("${SLURMSTACK_NODE_NAME}", name)
        assert "$" not in line and f"Topology={UNPLACED_TOPOLOGY}" in line, line
        munge = {str(self.cluster.munge_socket.parent): "/run/munge"}
        cmd = host_command(self.network, host, name, munge, shlex.split(line))
        self.nodes[host] = self.cluster.spawn(cmd, f"slurmd-{name}.out")
        return name

    def stop_node(self, host: str) -> None:
        proc = self.nodes.pop(host)
        proc.terminate()
        proc.wait(timeout=30)

    def records(self) -> dict[str, NodeRecord]:
        out = self.client("scontrol", "--all", "--oneliner", "show", "node").stdout
        found = (NodeRecord.parse(x) for x in out.splitlines() if x.startswith("NodeName="))
        return {r.name: r for r in found}

    def idle(self, hosts: list[str]) -> Callable[[], bool]:
        def check() -> bool:
            records = self.records()
            names = [self.name(h) for h in hosts]
            return all(n in records and records[n].base == "IDLE" for n in names)

        return check

    def observed(self, hosts: list[str]) -> Observed:
        """What the controller's pass sees: Slurm's records, and a running instance at each
        started host's address."""
        instances = tuple(
            Instance(instance_id(h), ADDRESSES[h], self.pool, "running") for h in hosts
        )
        return Observed(time.time(), tuple(self.records().values()), frozenset(), aws=True,
                        instances=instances)  # fmt: skip

    def switches(self) -> dict[str, list[str]]:
        """`scontrol show topology`: switch -> its nodes (every node below it)."""
        out = self.client("scontrol", "show", "topology").stdout
        shown = {}
        for line in out.splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            if "SwitchName" in fields:
                shown[fields["SwitchName"]] = expand(fields.get("Nodes", ""))
        return shown

    def leaves_of(self, names: list[str]) -> set[str]:
        return {LEAVES[self.host_of(n)] for n in names}

    def run_on(self, *args: str, partition: str | None = None) -> list[str]:
        """The nodes an srun with ``args`` ran on (in the pool's partition by default)."""
        out = self.client("srun", "-p", partition or self.pool, "-t", "2", *args,
                          "sh", "-c", "echo $SLURMD_NODENAME").stdout  # fmt: skip
        return sorted(set(out.split()))


class HeadOf:
    """The head's context as place() uses it: EC2 (stubbed), its state, scontrol on ctl."""

    def __init__(self, fabric: Fabric, client: Any) -> None:
        self.fabric = fabric
        self.aws = SimpleNamespace(ec2=lambda: client)

    def path(self, path: str) -> Path:
        return self.fabric.cluster.root / "state" / path.lstrip("/")

    def bounded(self, _seconds: float, *cmd: str, check: bool = False) -> Any:
        return self.fabric.client(*cmd, check=check)


def ec2() -> Any:
    return boto3.client("ec2", region_name="eu-north-1", aws_access_key_id="x",
                        aws_secret_access_key="x")  # fmt: skip


def answer(hosts: list[str]) -> dict[str, Any]:
    return {
        "Instances": [{"InstanceId": instance_id(h), "NetworkNodes": path_of(h)} for h in hosts]
    }


def controller_pass(fabric: Fabric, hosts: list[str], response: dict[str, Any] | None,
                    now: float | None = None) -> dict[str, Any] | None:  # fmt: skip
    """One pass of the head's placement, EC2 answering ``response`` (None: EC2 fails)."""
    client = ec2()
    observed = fabric.observed(hosts)
    if now is not None:
        observed = Observed(
            now, observed.nodes, frozenset(), aws=True, instances=observed.instances
        )
    config = SimpleNamespace(pools=(pool_ref(topology_plan(), topology_plan().pool(POOL)),))
    with Stubber(client) as stub:
        if response is None:
            stub.add_client_error("describe_instance_topology", "RequestLimitExceeded")
        else:
            stub.add_response("describe_instance_topology", response)
        return placing.place(HeadOf(fabric, client), config, observed)  # type: ignore[arg-type]


def wait(condition: Callable[[], bool], what: str, fabric: Fabric, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout * 2)):
        if condition():
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    raise AssertionError(f"not within {timeout} s: {what}\n{fabric.cluster.logs()}")


def fabric_of(cluster: Cluster, plan: ClusterPlan, pool: str) -> Iterator[Fabric]:
    """A controller on its host, with ``plan``'s rendered head files; ``pool``'s nodes are
    started by the test."""
    network = make_network(ADDRESSES)
    try:
        fabric = Fabric(cluster, network, plan=plan, pool=pool)
        write_config(cluster, head_files(plan), pool_files(plan, plan.pool(pool))[TASK_PROLOG_PATH])
        lines = [
            f"SlurmctldHost={CONTROLLER}({ADDRESSES[CONTROLLER]})"
            if x.startswith("SlurmctldHost=") else x
            for x in cluster.conf.read_text().splitlines()
        ]  # fmt: skip
        cluster.conf.write_text("\n".join(lines) + "\n")
        cluster.start_munged()
        fabric.start_controller()
        yield fabric
    finally:
        cluster.stop()  # the daemons first: they live in the namespaces
        network.close()


@pytest.fixture
def fabric(cluster: Cluster) -> Iterator[Fabric]:
    yield from fabric_of(cluster, topology_plan(), POOL)


def started(fabric: Fabric, hosts: list[str]) -> None:
    for host in hosts:
        fabric.start_node(host)
    wait(fabric.idle(hosts), f"{hosts} idle", fabric)


def test_switches_1_stays_in_one_leaf_and_a_larger_job_takes_the_fewest(
    cluster: Cluster, request: pytest.FixtureRequest
) -> None:
    if rendered_for_older_slurm():
        return
    fabric: Fabric = request.getfixturevalue("fabric")
    hosts = list(LEAVES)
    started(fabric, hosts)
    assert set(fabric.switches()[UNPLACED_SWITCH]) == {fabric.name(h) for h in hosts}
    result = controller_pass(fabric, hosts, answer(hosts))
    assert result is not None and result["unanswered"] == [], result
    switches = fabric.switches()
    for leaf in ("leaf-a", "leaf-b", "leaf-c"):
        assert switches[leaf] == sorted(fabric.name(h) for h in hosts if LEAVES[h] == leaf)
    assert switches[UNPLACED_SWITCH] == []
    # Two nodes under one leaf, every time.
    for _ in range(3):
        ran = fabric.run_on("-N2", "--switches=1")
        assert len(ran) == 2 and len(fabric.leaves_of(ran)) == 1, ran
    # Leaf a busy: --switches=1 takes leaf b, the only other leaf with two free nodes.
    busy = fabric.client(
        "sbatch", "--parsable", "-p", POOL, "-t", "5", "-N2", "--exclusive", "-w",
        ",".join(fabric.name(h) for h in ("n1", "n2")), "--wrap", "sleep 120",
    ).stdout.strip()  # fmt: skip
    wait(lambda: "RUNNING" in fabric.client("squeue", "-h", "-j", busy, "-o", "%T").stdout,
         "the busy job running", fabric)  # fmt: skip
    ran = fabric.run_on("-N2", "--switches=1")
    assert fabric.leaves_of(ran) == {"leaf-b"}, ran
    fabric.client("scancel", busy)
    wait(fabric.idle(hosts), "every node idle again", fabric)
    # Three nodes: two leaves (no leaf has three), never three.
    for _ in range(3):
        ran = fabric.run_on("-N3")
        assert len(ran) == 3 and len(fabric.leaves_of(ran)) == 2, ran


def test_nodes_joining_and_leaving_keep_the_tree_without_a_restart_or_a_failed_job(
    cluster: Cluster, request: pytest.FixtureRequest
) -> None:
    if rendered_for_older_slurm():
        return
    fabric: Fabric = request.getfixturevalue("fabric")
    first = ["n1", "n2", "n3"]
    started(fabric, first)
    controller_pass(fabric, first, answer(first))
    pid = fabric.pid()
    # Jobs submitted all along, as users would while the pool scales.
    submit = ("sbatch", "-p", POOL, "-t", "1", "-N1", "--wrap", "true")
    with SubmittedAlong(lambda: fabric.client(*submit, check=False)) as along:
        # Two nodes join; the next pass places them (the placed ones are not asked about).
        joining = ["n4", "n5"]
        started(fabric, joining)
        result = controller_pass(fabric, first + joining, answer(joining))
        assert result is not None
        assert sorted(n for names in result["placed"].values() for n in names) == sorted(
            fabric.name(h) for h in joining
        )
        switches = fabric.switches()
        assert switches["leaf-b"] == sorted(fabric.name(h) for h in ("n3", "n4"))
        assert switches["leaf-c"] == [fabric.name("n5")]
        # One leaves: its slurmd stops and the reaper deletes its record (as the head's
        # controller does for a node whose instance is gone).
        gone = fabric.name("n2")
        fabric.stop_node("n2")
        wait(lambda: fabric.client("scontrol", "delete", f"nodename={gone}",
                                   check=False).returncode == 0, f"{gone} deleted", fabric)  # fmt: skip
        switches = fabric.switches()
        assert gone not in switches["leaf-a"] and gone not in switches[TOP], switches
        assert switches["leaf-a"] == [fabric.name("n1")]
        ran = fabric.run_on("-N4")
        assert sorted(ran) == sorted(fabric.name(h) for h in ("n1", "n3", "n4", "n5"))
    assert fabric.pid() == pid, "slurmctld restarted"
    assert along.submitted > 0 and along.failures == [], along.failures


def test_ec2_failing_leaves_scheduling_working_and_a_later_pass_places(
    cluster: Cluster, request: pytest.FixtureRequest
) -> None:
    if rendered_for_older_slurm():
        return
    fabric: Fabric = request.getfixturevalue("fabric")
    hosts = ["n1", "n2", "n3", "n4"]
    started(fabric, hosts)
    result = controller_pass(fabric, hosts, None)
    assert result is not None and "RequestLimitExceeded" in result["error"], result
    records = fabric.records()
    assert all(records[fabric.name(h)].fields["Topology"] == UNPLACED_TOPOLOGY for h in hosts)
    # Every node reachable: jobs of every size run, --switches=1 too (the unplaced leaf).
    assert len(fabric.run_on("-N4")) == 4
    assert len(fabric.run_on("-N2", "--switches=1")) == 2
    # A later pass (EC2 answering again) places them.
    result = controller_pass(fabric, hosts, answer(hosts))
    assert result is not None and not result["unanswered"], result
    records = fabric.records()
    assert {records[fabric.name(h)].fields["Topology"] for h in hosts} == {
        topology_value(path_of("n1")),
        topology_value(path_of("n3")),
    }
