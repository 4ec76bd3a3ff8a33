"""The head node is replaced: a new instance (a new namespace) with the same Slurm state
volume. Workers find the new head node and what was running survives: a job that ran through
the replacement is still running, on the same node, under the same id; the next job gets a
later id; every worker is still registered and takes new jobs.

The new head node keeps the old one's address (stand-in "stable-head-address": it is launched on
the network interface the old one had): that is how workers, whose slurmd keeps the controller
address it started with, find it again.
"""

from __future__ import annotations

import pytest

from vcluster.harness import VirtualCluster, wait_until

pytestmark = pytest.mark.vcluster


def job_fields(cluster: VirtualCluster, job_id: str) -> dict[str, str]:
    assert cluster.head is not None
    out = cluster.head.run("scontrol", "show", "job", job_id, "-o", check=False).stdout
    return dict(f.split("=", 1) for f in out.split() if "=" in f)


def submit(cluster: VirtualCluster, *args: str) -> str:
    assert cluster.head is not None
    out = cluster.head.run("sbatch", "--parsable", "--chdir=/tmp", "--output=/dev/null", *args)
    return out.stdout.strip().split(";")[0]


def test_a_new_head_node_takes_over_the_state_and_the_workers(vcluster: VirtualCluster) -> None:
    old = vcluster.head
    assert old is not None
    job = submit(vcluster, "-p", "cpu", "-N1", "-t", "10", "--wrap", "sleep 600")
    running = wait_until(
        lambda: (f := job_fields(vcluster, job)).get("JobState") == "RUNNING" and f,
        f"job {job} to run",
        timeout=60,
    )
    try:
        new = vcluster.replace_head()
        assert new.instance_id != old.instance_id
        assert new.address == old.address
        assert new.run("hostname").stdout.strip() == f"{vcluster.plan.name}-head"
        records = vcluster.wait_registered()
        assert set(records) == {vcluster.slurm_name(n) for n in vcluster.workers.values()}

        after = job_fields(vcluster, job)
        assert after["JobState"] == "RUNNING"
        assert after["NodeList"] == running["NodeList"]
        assert after["StartTime"] == running["StartTime"]
        later = submit(vcluster, "-p", "gpu", "-N2", "-t", "1", "--wrap", "true")
        assert int(later) > int(job)
        hosts = new.run("srun", "-p", "gpu", "-N2", "-t", "1", "--chdir=/tmp", "hostname")
        assert sorted(hosts.stdout.split()) == sorted(
            vcluster.slurm_name(n) for n in vcluster.pool_nodes("gpu")
        )
    finally:
        if vcluster.head is not None and vcluster.head.alive:
            vcluster.head.run("scancel", job, check=False)
