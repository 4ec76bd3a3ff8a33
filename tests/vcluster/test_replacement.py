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
    victim = vcluster.pool_nodes("gpu")[0]
    dead_name = vcluster.slurm_name(victim)
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
    assert new.role == "gpu" and new.address != victim.address and new_name != dead_name
    records = vcluster.wait_registered()
    assert records[new_name]["Partitions"] == "gpu"
    assert records[new_name]["Gres"] == "gpu:l40s:4"
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
