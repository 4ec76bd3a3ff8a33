"""A worker dies and its Auto Scaling group replaces it.

The instance is killed (every process and its network at once). slurmctld notices by itself and
marks the node DOWN; the group launches a replacement (moto), whose new address gives it a new
name, under which it boots and registers; the head node's reaper then deletes the dead record,
after checking with EC2 (moto) that no instance of the cluster has its address any more.
"""

from __future__ import annotations

import json

import pytest

from vcluster.harness import VirtualCluster, wait_until

pytestmark = pytest.mark.vcluster


def test_a_killed_worker_is_replaced_and_its_record_reaped(vcluster: VirtualCluster) -> None:
    assert vcluster.head is not None
    # A node without a reason: on Slurm 23.02 to 25.11 with no accounting storage (this
    # cluster's), a node the day-2 scenarios drained and repaired keeps its old reason after
    # it resumed (docs/slurm-versions.md), and Slurm appends "Not responding" to it, which the
    # reaper reads as a reason someone set and keeps. Production has accounting by default,
    # and 26.05 clears the reason either way.
    # The gpu pool's first such node, else the cpu pool's (after the day-2 scenarios every gpu
    # node has been drained once).
    records = vcluster.node_records()
    victim = next(
        n
        for pool in ("gpu", "cpu")
        for n in vcluster.pool_nodes(pool)
        if not records.get(vcluster.slurm_name(n), {}).get("Reason")
    )
    dead_name = vcluster.slurm_name(victim)
    gres = {"gpu": "gpu:l40s:4", "cpu": "(null)"}[victim.role]
    vcluster.kill(victim)

    down = wait_until(
        lambda: (
            (r := vcluster.node_records().get(dead_name, {})).get("State", "").startswith("DOWN")
            and r
        ),
        f"slurmctld to mark {dead_name} DOWN",
        timeout=90,
    )
    assert down["State"] == "DOWN+DYNAMIC_NORM+NOT_RESPONDING"
    assert down["Reason"] == "Not responding"

    new = vcluster.replace(victim)
    new_name = vcluster.slurm_name(new)
    assert new.role == victim.role and new.address != victim.address and new_name != dead_name
    records = vcluster.wait_registered()
    assert records[new_name]["Partitions"] == victim.role
    assert records[new_name]["Gres"] == gres
    ec2 = vcluster.aws.client("ec2")
    state = ec2.describe_instances(InstanceIds=[victim.instance_id])["Reservations"][0]
    assert state["Instances"][0]["State"]["Name"] == "terminated"

    # The reaper as its timer runs it, with a grace period this test can wait out.
    out = vcluster.head.run("slurmstack-node", "reap", "--grace", "1").stdout
    result = json.loads(out)
    assert result["deleted"] == [dead_name]
    assert result["failed"] == {}
    assert dead_name not in vcluster.node_records()
    assert set(vcluster.wait_registered()) == {
        vcluster.slurm_name(n) for n in vcluster.workers.values()
    }
