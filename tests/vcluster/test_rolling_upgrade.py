"""Slurm's rolling upgrade, from the older leg to the version of record, on the virtual cluster
(definitions/upgrade.yaml: a head, two CPU nodes, accounting on an external database; a
cluster of its own).

The cluster boots on the image's build of 24.11.5 (stand-in "slurm-version": the rehearsal's
build, laid over each node's /usr) and is upgraded to 26.05.5 (Debian's build of the version of
record) in the order docs/slurm-versions.md gives, which is SchedMD's: the definition's
`slurm.version` moves to 26.05.5 with `slurm.upgrade_from: 24.11.5`; the head is replaced
(a new instance of the new release: slurmdbd converts the database, then slurmctld takes the
state volume); then each node of the pool goes through its group's drain hook, as an instance
refresh takes it, and its replacement boots the new release; last, `upgrade_from` is removed,
a live change that gives slurm.conf the new release's keys.

What it proves: a job running across the head's upgrade keeps running and finishes; a job on
one node keeps running while the other is refreshed, and finishes; the pool runs a job across
both releases at once; accounting keeps every job; every node comes back, on the new release.
What is not real: the image of the new release is Debian's build of it, not `build.sh`'s (its
source is not served here: docs/slurm-versions.md), and the refresh is the harness's (moto has
no instance refresh): the group's drain hook and its replacement are the same path a scale-in
takes (test_day2.py).
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vcluster.conftest import require_host
from vcluster.harness import VirtualCluster, wait_until
from vcluster.harness.node import Node
from vcluster.harness.node_slurm import assert_nodes_run, image, record

pytestmark = [pytest.mark.vcluster, pytest.mark.upgrade]

DEFINITION = Path(__file__).resolve().parent / "definitions" / "upgrade.yaml"
OLD = image()
NEW = record()
# A job that waits on the shared home until the test releases it (bounded by its time limit).
WAIT_FOR_RELEASE = "while [ ! -e /home/release-$SLURM_JOB_ID ]; do sleep 1; done"
JOB_SECONDS = 120


@pytest.fixture(scope="module")
def cluster() -> Iterator[VirtualCluster]:
    require_host(OLD)
    require_host(NEW)
    assert OLD.version != NEW.version
    with VirtualCluster(DEFINITION, keep=os.environ.get("VCLUSTER_KEEP") == "1", slurm=OLD) as c:
        yield c
        print(f"\nupgrade virtual cluster timings (s): {c.timings}")
    assert c.leftovers() == [], "the upgrade cluster's cleanup left these behind"


def submit(cluster: VirtualCluster, *args: str) -> str:
    assert cluster.head is not None
    out = cluster.head.run(
        "sbatch", "--parsable", "--chdir=/tmp", "--output=/dev/null", "-p", "cpu", "-t", "10",
        *args, timeout=120,
    )  # fmt: skip
    return out.stdout.strip().split(";")[0]


def job(cluster: VirtualCluster, job_id: str) -> dict[str, str]:
    assert cluster.head is not None
    out = cluster.head.run("scontrol", "-o", "show", "job", job_id, check=False).stdout
    return dict(w.split("=", 1) for w in out.split() if "=" in w)


def wait_state(cluster: VirtualCluster, job_id: str, state: str) -> dict[str, str]:
    try:
        return wait_until(
            lambda: (j := job(cluster, job_id)).get("JobState") == state and j,
            f"job {job_id} {state}",
            JOB_SECONDS,
        )
    except TimeoutError as exc:
        raise AssertionError(f"{exc}: {job(cluster, job_id)}\n{cluster.logs()[-20000:]}") from None


def release(cluster: VirtualCluster, job_id: str) -> None:
    assert cluster.head is not None
    cluster.head.run("touch", f"/home/release-{job_id}")


def versions(cluster: VirtualCluster) -> dict[str, str]:
    """The release slurmctld records for each registered node."""
    return {name: r.get("Version", "") for name, r in cluster.node_records().items()}


def slurmd_version(node: Node) -> str:
    return node.run("slurmd", "-V").stdout.split()[-1]


def control(cluster: VirtualCluster) -> dict[str, Any]:
    """One pass of the head's controller (its timer runs it every minute)."""
    assert cluster.head is not None
    return json.loads(cluster.head.run("slurmstack-node", "control", timeout=120).stdout)


def refresh(cluster: VirtualCluster, node: Node) -> Node:
    """The pool's instance refresh takes ``node``: its group starts terminating it, the
    controller drains it and, once it is idle, completes the drain hook; the group launches its
    replacement, which boots the new image and registers. The old record is reaped."""
    name = cluster.slurm_name(node)
    cluster.begin_termination(node.instance_id)
    wait_until(
        lambda: any(
            a["action"] == "complete" and a.get("node") == name for a in control(cluster)["actions"]
        ),
        f"the controller to let {name} go",
        JOB_SECONDS,
        poll=2,
    )
    assert cluster.lifecycle_completed(node.instance_id) == "CONTINUE"
    (new,) = cluster.settle_groups()
    cluster.wait_registered()
    control(cluster)  # the old record set DOWN: its instance is gone
    assert cluster.head is not None
    out = json.loads(cluster.head.run("slurmstack-node", "reap", "--grace", "0").stdout)
    assert name in out["deleted"], out
    return new


def accounted(cluster: VirtualCluster, jobs: list[str]) -> dict[str, str]:
    """sacct's state of each job once every one is COMPLETED (a record reaches slurmdbd a moment
    after its job ends)."""
    assert cluster.head is not None
    head = cluster.head

    def states() -> dict[str, str]:
        out = head.run("sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", ",".join(jobs),
                       check=False).stdout  # fmt: skip
        return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)

    try:
        return wait_until(
            lambda: (s := states()) == dict.fromkeys(jobs, "COMPLETED") and s, "sacct", 60, 2
        )
    except TimeoutError:
        raise AssertionError(f"sacct: {states()} for {jobs}\n{cluster.logs()[-20000:]}") from None


def upgraded(definition: dict[str, Any], upgrade_from: str | None) -> dict[str, Any]:
    changed = copy.deepcopy(definition)
    changed["slurm"]["version"] = NEW.version
    if upgrade_from is not None:
        changed["slurm"]["upgrade_from"] = upgrade_from
    return changed


def test_a_cluster_upgrades_from_the_older_leg_to_the_version_of_record(
    cluster: VirtualCluster,
) -> None:
    assert_nodes_run(cluster)  # every node on the older leg, the image's build
    names = sorted(cluster.slurm_name(n) for n in cluster.workers.values())
    assert set(versions(cluster).values()) == {OLD.version}
    before = submit(cluster, "-N2", "--wrap", "srun -N2 true")
    wait_state(cluster, before, "COMPLETED")
    across_head = submit(cluster, "-N2", "--wrap", f"srun -N2 sh -c '{WAIT_FOR_RELEASE}'")
    running = wait_state(cluster, across_head, "RUNNING")

    # 1. The head: the new slurm.version with upgrade_from, whose slurm.conf the old slurmd
    # read (the associations run it on the head and the nodes before the replacement), then
    # the head's new instance on the new release.
    # What nodes launched from now on boot: the new release's image. (Set first: the store's
    # slurm.conf is then the one Debian's build reads, MpiDefault=none, for both releases.)
    began = time.monotonic()
    cluster.slurm = NEW
    cluster.apply_config(upgraded(cluster.definition, upgrade_from=OLD.version))
    head = cluster.replace_head()
    assert head.run("slurmctld", "-V").stdout.split()[-1] == NEW.version
    assert head.run("slurmdbd", "-V").stdout.split()[-1] == NEW.version
    cluster.wait_registered()
    after = job(cluster, across_head)
    assert after["JobState"] == "RUNNING", after
    assert (after["NodeList"], after["StartTime"]) == (running["NodeList"], running["StartTime"])
    # The nodes still run the old release, under the new slurmctld (which learns a node's
    # release when the node registers again, at its next ping).
    wait_until(
        lambda: versions(cluster) == dict.fromkeys(names, OLD.version),
        f"the nodes to register again with the new slurmctld: {versions(cluster)}",
        JOB_SECONDS,
    )
    assert {slurmd_version(n) for n in cluster.workers.values()} == {OLD.version}
    took = {"head": time.monotonic() - began}
    release(cluster, across_head)
    wait_state(cluster, across_head, "COMPLETED")

    # 2. The pool's refresh, a node at a time: one node refreshed while a job runs on the
    # other, which finishes where it ran; a job then spans both releases.
    first, second = cluster.pool_nodes("cpu")
    across_refresh = submit(cluster, "-N1", "-w", cluster.slurm_name(second),
                            "--wrap", WAIT_FOR_RELEASE)  # fmt: skip
    wait_state(cluster, across_refresh, "RUNNING")
    began = time.monotonic()
    new_first = refresh(cluster, first)
    took["first node"] = time.monotonic() - began
    assert slurmd_version(new_first) == NEW.version
    assert versions(cluster)[cluster.slurm_name(new_first)] == NEW.version
    assert job(cluster, across_refresh)["JobState"] == "RUNNING"
    release(cluster, across_refresh)
    finished = wait_state(cluster, across_refresh, "COMPLETED")
    assert finished["NodeList"] == cluster.slurm_name(second) and finished["Restarts"] == "0"
    mixed = submit(cluster, "-N2", "--wrap", "srun -N2 true")
    wait_state(cluster, mixed, "COMPLETED")
    began = time.monotonic()
    new_second = refresh(cluster, second)
    took["second node"] = time.monotonic() - began
    assert slurmd_version(new_second) == NEW.version

    # 3. upgrade_from removed: a live change (no node replaced); slurm.conf gets the new
    # release's keys, which every slurmd now reads.
    cluster.apply_config(upgraded(cluster.definition, upgrade_from=None))
    conf = head.run("cat", "/etc/slurm/slurm.conf").stdout
    assert "HealthCheckTimeout=" in conf, "the new release's keys did not arrive"
    records = cluster.wait_registered()
    assert len(records) == len(names), records  # no node lost: the pool at its size
    assert set(versions(cluster).values()) == {NEW.version}
    assert_nodes_run(cluster)
    last = submit(cluster, "-N2", "--wrap", "srun -N2 true")
    wait_state(cluster, last, "COMPLETED")

    # Accounting kept every job: before, across and after the upgrade.
    accounted(cluster, [before, across_head, across_refresh, mixed, last])
    print(f"\nupgrade: seconds per step { ({k: round(v, 1) for k, v in took.items()}) }")
