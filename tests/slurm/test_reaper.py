"""The head node's reaper (`slurmstack-node reap`) against real Slurm: a dynamic node of a pool
registers, its slurmd stops (the instance is gone), slurmctld itself marks it DOWN ("Not
responding"), and the reaper, running the real scontrol, deletes that record and keeps the
node that is still up.

Only this test's copy of slurm.conf sets SlurmdTimeout=3 (rendered: 300), so slurmctld gives
up on the stopped slurmd within seconds; nothing else is changed. The node is not set DOWN by
hand: the reaper must recognise the state, flags and reason stamp slurmctld sets on its own.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from slurm.conftest import Cluster, wait_for, write_config
from slurm.test_dynamic_node import node_fields, slurmd_command
from slurmstack import contract
from slurmstack.contract import NODE_CONFIG_PATH, TASK_PROLOG_PATH
from slurmstack.node import cli, slurm
from slurmstack.node.context import Context
from slurmstack.node.controller import reap
from slurmstack.render import SLURMD_UNIT_PATH, head_files, pool_files
from support.examples import example_plan

pytestmark = pytest.mark.slurm

SLURMD_TIMEOUT = "3"


def head_node(cluster: Cluster, files: dict[str, str]) -> Context:
    """The agent as on the head node: its node.json as rendered, scontrol for real (with this
    test's SLURM_CONF), no AWS."""
    root = cluster.root / "head"
    config = root / NODE_CONFIG_PATH.lstrip("/")
    config.parent.mkdir(parents=True)
    config.write_text(files[NODE_CONFIG_PATH])

    def run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        env = cluster.env()
        return subprocess.run(cmd, check=check, text=True, capture_output=True, env=env)

    return Context(root=root, run=run, sleep=lambda _s: None, owner=lambda _n: (0, 0))


def state(cluster: Cluster, name: str) -> str:
    return node_fields(cluster, name).get("State", "")


def test_reap_deletes_the_node_slurmctld_found_dead_and_keeps_the_live_one(
    cluster: Cluster, capsys
) -> None:
    plan = example_plan("cpu-hpc")
    pool = plan.pool("batch")
    head, files = head_files(plan), pool_files(plan, pool)
    write_config(cluster, head, files[TASK_PROLOG_PATH], {"SlurmdTimeout": SLURMD_TIMEOUT})
    cluster.start_munged()
    cluster.start_slurmctld()
    unit = files[SLURMD_UNIT_PATH]

    # The instance that dies. Both slurmds listen on this host's one SlurmdPort, so the
    # replacement starts only once slurmctld has given up on the first.
    dead = contract.node_name(contract.node_name_prefix(pool.name), "10.42.7.19")
    slurmd = cluster.start_slurmd(slurmd_command(unit, cluster, dead), dead)
    wait_for(lambda: state(cluster, dead).startswith("IDLE"), f"{dead} idle", cluster)
    slurmd.terminate()
    slurmd.wait(timeout=10)
    # slurmctld takes about 16 s here (its ping retries), whatever the short SlurmdTimeout.
    wait_for(lambda: state(cluster, dead).startswith("DOWN"), f"{dead} DOWN", cluster, timeout=45)
    fields = node_fields(cluster, dead)
    assert fields["State"] == "DOWN+DYNAMIC_NORM+NOT_RESPONDING"

    # Its replacement: a new address, so a new name.
    live = contract.node_name(contract.node_name_prefix(pool.name), "10.42.9.3")
    cluster.start_slurmd(slurmd_command(unit, cluster, live), live)
    wait_for(lambda: state(cluster, live).startswith("IDLE"), f"{live} idle", cluster)

    node = head_node(cluster, head)
    # The record as the reaper reads it: Slurm's own reason, stamped by SlurmUser.
    records = {n.name: n for n in slurm.slurm_nodes(node)}
    assert records[dead].reason == "Not responding"
    assert records[dead].reasons == ("Not responding",)
    assert records[dead].reason_user in slurm.slurm_users(node)
    assert records[dead].reason_time is not None
    # The typed record of the Slurm at hand: base state and flags apart, its pool's feature.
    assert (records[dead].base, records[dead].flags) == ("DOWN", {"DYNAMIC_NORM", "NOT_RESPONDING"})
    assert pool.feature in records[dead].features and records[dead].address
    assert records[live].base == "IDLE" and not records[live].out_of_service

    # Within the default grace period nothing goes.
    early = reap.reap(node, ec2=False)
    assert early["deleted"] == []
    assert "grace" in early["kept"][dead]

    code = cli.main(["reap", "--grace", "0", "--no-ec2"], ctx=node)
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["deleted"] == [dead]
    assert result["failed"] == {}

    listing = cluster.scontrol("show", "node", "-o").stdout
    assert f"NodeName={dead} " not in listing
    assert cluster.scontrol("show", "node", dead, check=False).returncode != 0
    assert state(cluster, live).startswith("IDLE")
    # Nothing left to do: a second run deletes nothing.
    assert reap.reap(node, grace=0, ec2=False)["deleted"] == []


def test_reap_keeps_a_node_an_operator_drained_before_it_died(cluster: Cluster) -> None:
    """An operator drains a node (as root, with a reason of their own), then its slurmd stops:
    slurmctld, running as SlurmUser=slurm, marks it DOWN and not responding. Slurm 22.05 keeps
    the operator's reason and stamp; 23.02 and later append " : Not responding" and stamp the
    whole as slurm. Either way the reaper leaves the record for the operator."""
    plan = example_plan("cpu-hpc")
    pool = plan.pool("batch")
    head, files = head_files(plan), pool_files(plan, pool)
    write_config(cluster, head, files[TASK_PROLOG_PATH], {"SlurmdTimeout": SLURMD_TIMEOUT})
    cluster.start_munged()
    cluster.start_slurmctld()
    name = contract.node_name(contract.node_name_prefix(pool.name), "10.42.7.23")
    slurmd = cluster.start_slurmd(slurmd_command(files[SLURMD_UNIT_PATH], cluster, name), name)
    wait_for(lambda: state(cluster, name).startswith("IDLE"), f"{name} idle", cluster)
    cluster.scontrol("update", f"nodename={name}", "state=drain", "reason=ECC errors on GPU 3")
    slurmd.terminate()
    slurmd.wait(timeout=10)
    wait_for(lambda: state(cluster, name).startswith("DOWN"), f"{name} DOWN", cluster, timeout=45)
    assert {"DRAIN", "NOT_RESPONDING"} <= set(state(cluster, name).split("+"))

    node = head_node(cluster, head)
    (record,) = [n for n in slurm.slurm_nodes(node) if n.name == name]
    assert record.reasons[0] == "ECC errors on GPU 3" and record.out_of_service
    result = reap.reap(node, grace=0, ec2=False)
    assert result["deleted"] == []
    assert "left for the operator" in result["kept"][name]
    assert cluster.scontrol("show", "node", name, check=False).returncode == 0


def test_the_test_copy_changes_only_slurmd_timeout(cluster: Cluster) -> None:
    plan = example_plan("cpu-hpc")
    head = head_files(plan)
    write_config(cluster, head, "", {"SlurmdTimeout": SLURMD_TIMEOUT})
    copy = (cluster.root / "etc" / "slurm.conf").read_text()
    assert "SlurmdTimeout=300" in head["/etc/slurm/slurm.conf"]
    assert f"SlurmdTimeout={SLURMD_TIMEOUT}" in copy.splitlines()
    assert "SlurmdTimeout=300" not in copy
