"""Day 2 on the virtual cluster: faults injected through the nodes' stand-ins (nvidia-smi, the
kernel log, the metadata service), found by the real HealthCheckProgram that the real slurmd
runs every health.check_interval_seconds (10 in two-pools.yaml), acted on by the head's
controller (`slurmstack-node control`, run here as its timer runs it), with the pools' groups
played by the harness where moto does not (stand-ins "asg-health", "asg-lifecycle").

Each scenario leaves the cluster as it found it: pools at full size and registered, dead
records reaped, breakers closed, the nodes it touched back in service.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from slurmstack.contract import CONTROLLER_LOG_PATH, instance_arn, log_prefix
from slurmstack.node.health.periodic import SPOT_NOTICE
from vcluster.harness import VirtualCluster, wait_until
from vcluster.harness.faults import gpu_faults, log_kernel, lose_gpu, xid
from vcluster.harness.imds import ACCOUNT_ID
from vcluster.harness.node import Node
from vcluster.harness.standins import EFA_PORT_ACTIVE

pytestmark = [pytest.mark.vcluster, pytest.mark.day2]

INTERVAL = 10  # health.check_interval_seconds of two-pools.yaml
# A finding drains its node at the node's next check, within one interval; CYCLE spreads the
# checks, the machine is shared: this much on top.
DRAIN_SECONDS = INTERVAL + 20
# A job that counts in a checkpoint file on /fsx until the test releases it, resuming from
# its checkpoint when it starts again (README, "When nodes fail").
JOB = """#!/bin/sh
ck=/fsx/day2/ckpt-$SLURM_JOB_ID
step=$(cat "$ck" 2>/dev/null || echo 0)
echo "start restart=${SLURM_RESTART_COUNT:-0} host=$(hostname) from=$step"
while [ ! -e "/fsx/day2/release-$SLURM_JOB_ID" ] && [ "$step" -lt 600 ]; do
  step=$((step + 1)); echo "$step" > "$ck"; sleep 1
done
echo "done host=$(hostname) step=$step"
"""

# What the driver prints with Xid 119 (NVIDIA/open-gpu-kernel-modules#446, data/kernel in the
# unit tests): NVIDIA's catalog resets the GPU for it, the policy reboots the node.
GSP_TIMEOUT = (
    "name=nvidia-smi, Timeout waiting for RPC from GSP! Expected function 76 (GSP_RM_CONTROL) "
    "(0x2080014b 0x5)."
)


@pytest.fixture
def cluster(vcluster: VirtualCluster) -> Iterator[VirtualCluster]:
    """The session's cluster with every breaker closed, before and after."""
    for pool in vcluster.plan.pools:
        control(vcluster, "breaker", "reset", pool.name)
    yield vcluster
    for pool in vcluster.plan.pools:
        control(vcluster, "breaker", "reset", pool.name)


def control(cluster: VirtualCluster, *args: str) -> dict:
    """`slurmstack-node control` (or another subcommand) on the head node; its JSON."""
    assert cluster.head is not None
    out = cluster.head.run("slurmstack-node", *(args or ("control",)), timeout=120).stdout
    return json.loads(out)


def actions(result: dict, node: str = "") -> list[str]:
    return [a["action"] for a in result["actions"] if not node or a.get("node") == node]


def record(cluster: VirtualCluster, name: str) -> dict[str, str]:
    return cluster.node_records().get(name, {})


def health_said(node: Node) -> str:
    """What the node's health checks said (slurmd logs their output)."""
    return node.run(
        "sh", "-c", "grep -h -A3 health_check /var/log/slurm/slurmd.log | tail -30"
    ).stdout


def wait_drained(cluster: VirtualCluster, name: str, reason: str) -> tuple[dict, float]:
    began = time.monotonic()
    try:
        found = wait_until(
            # DRAIN in the state too: Slurm 23.02 to 25.11 keeps a resumed node's old reason
            # when no accounting storage is configured (docs/slurm-versions.md), so a reason
            # alone can be the last drain's.
            lambda: (
                (r := record(cluster, name)).get("Reason", "").startswith(reason)
                and "DRAIN" in r.get("State", "")
                and r
            ),
            f"{name} drained with {reason!r}",
            timeout=DRAIN_SECONDS + 30,
        )
    except TimeoutError as exc:
        raise AssertionError(
            f"{exc}: {record(cluster, name)}\n{health_said(node_named(cluster, name))}"
        ) from None
    return found, time.monotonic() - began


def submit(cluster: VirtualCluster, *options: str) -> str:
    assert cluster.head is not None
    cluster.head.run("mkdir", "-p", "/fsx/day2")
    cluster.head.write_file("/fsx/day2/job.sh", JOB, "0755", "root:root")
    return cluster.head.run(
        "sbatch", "--parsable", "--chdir=/tmp", "-o", "/fsx/day2/%j.out", "--open-mode=append",
        *options, "/fsx/day2/job.sh",
    ).stdout.strip()  # fmt: skip


def job(cluster: VirtualCluster, job_id: str) -> dict[str, str]:
    assert cluster.head is not None
    out = cluster.head.run("scontrol", "-o", "show", "job", job_id, check=False).stdout
    return dict(w.split("=", 1) for w in out.split() if "=" in w)


def job_output(cluster: VirtualCluster, job_id: str) -> str:
    assert cluster.head is not None
    return cluster.head.run("cat", f"/fsx/day2/{job_id}.out").stdout


def release(cluster: VirtualCluster, job_id: str) -> None:
    assert cluster.head is not None
    cluster.head.run("touch", f"/fsx/day2/release-{job_id}")


def running_on(cluster: VirtualCluster, job_id: str) -> str:
    return wait_until(
        lambda: (
            job(cluster, job_id).get("JobState") == "RUNNING" and job(cluster, job_id)["NodeList"]
        ),
        f"job {job_id} running",
        timeout=60,
    )


def node_named(cluster: VirtualCluster, name: str) -> Node:
    return next(n for n in cluster.workers.values() if cluster.slurm_name(n) == name)


def bucket_keys(cluster: VirtualCluster, pool: str, instance: str) -> set[str]:
    prefix = log_prefix(pool, instance_arn(cluster.plan.region, ACCOUNT_ID, instance))
    listing = cluster.aws.client("s3").list_objects_v2(
        Bucket=cluster.deployment.bucket, Prefix=prefix
    )
    return {o["Key"].removeprefix(prefix) for o in listing.get("Contents", [])}


def wait_for_logs(cluster: VirtualCluster, node: Node, key: str = "shipped.json") -> None:
    """Until the node's logs are in the bucket; what the node said about it if they never are."""
    try:
        wait_until(
            lambda: key in bucket_keys(cluster, node.role, node.instance_id),
            f"{key} of {node.instance_id} in the bucket",
            timeout=DRAIN_SECONDS,
        )
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{health_said(node)}") from None


def replace_through_group(cluster: VirtualCluster, old: Node) -> Node:
    """The group lets the instance go once the controller completed its lifecycle action, and
    its replacement boots and registers."""
    assert cluster.lifecycle_completed(old.instance_id) == "CONTINUE"
    (new,) = cluster.settle_groups()
    cluster.wait_registered()
    return new


def reap(cluster: VirtualCluster, name: str) -> None:
    """The dead record goes (the controller does it after 15 minutes)."""
    assert cluster.head is not None
    out = json.loads(cluster.head.run("slurmstack-node", "reap", "--grace", "0").stdout)
    assert name in out["deleted"], out
    assert name not in cluster.node_records()


def test_a_gpu_that_falls_off_is_drained_replaced_and_its_job_finishes_elsewhere(
    cluster: VirtualCluster,
) -> None:
    job_id = submit(cluster, "-p", "gpu", "-N1", "--requeue")
    name = running_on(cluster, job_id)
    victim = node_named(cluster, name)
    lose_gpu(victim, 1)
    drained, took = wait_drained(cluster, name, "slurmstack:gpu-xid: 79 ")
    print(f"\nday2: {name} drained {took:.1f} s after its GPU fell off (interval {INTERVAL} s)")
    assert "GPU has fallen off the bus" in drained["Reason"]
    assert took <= DRAIN_SECONDS
    # The node copies its logs once it has drained itself.
    wait_for_logs(cluster, victim, "var/log/slurmstack/health.log")

    result = control(cluster)
    assert actions(result, name) == ["replace"]
    # Set DOWN (its job requeued); with ReturnToService=2 a node whose slurmd still answers
    # registers again as IDLE, but stays drained, its reason saying what goes on.
    out = record(cluster, name)
    assert "DOWN" in out["State"] or "DRAIN" in out["State"], out["State"]
    assert out["Reason"].endswith(f"; replacing {victim.instance_id}")
    health = cluster.aws.client("autoscaling").describe_auto_scaling_instances(
        InstanceIds=[victim.instance_id]
    )["AutoScalingInstances"][0]["HealthStatus"]
    assert health.upper() == "UNHEALTHY"
    # Its job went back to the queue at once, and starts again on the other GPU node.
    other = wait_until(
        lambda: (
            (j := job(cluster, job_id)).get("JobState") == "RUNNING"
            and j["NodeList"] != name
            and j["NodeList"]
        ),
        f"job {job_id} running again elsewhere",
        timeout=90,
    )
    assert job(cluster, job_id)["Restarts"] == "1"

    # The group terminates the Unhealthy instance through its drain hook; the controller lets
    # it go (no job on it, its logs in the bucket); a new instance boots and registers.
    assert cluster.settle_groups() == []
    assert actions(control(cluster)) == ["complete"]
    new = replace_through_group(cluster, victim)
    assert new.role == "gpu" and cluster.slurm_name(new) not in (name, other)

    release(cluster, job_id)
    wait_until(
        lambda: job(cluster, job_id).get("JobState") == "COMPLETED", f"job {job_id} done", 60
    )
    lines = job_output(cluster, job_id).splitlines()
    first, again = (line for line in lines if line.startswith("start "))
    assert first.startswith(f"start restart=0 host={name} from=0")
    restart, host, resumed = again.split()[1:]
    assert (restart, host) == ("restart=1", f"host={other}")
    assert int(resumed.removeprefix("from=")) > 0  # from its checkpoint, not from the start
    assert lines[-1].startswith(f"done host={other}")
    keys = bucket_keys(cluster, "gpu", victim.instance_id)
    assert {"var/log/cloud-init-output.log", "var/log/slurm/slurmd.log", "shipped.json"} <= keys
    # Its record: DOWN as gone, then deleted.
    assert actions(control(cluster), name) == ["down"]
    assert record(cluster, name)["Reason"].startswith("slurmstack:instance-gone: ")
    reap(cluster, name)


def test_an_xid_that_calls_for_a_reboot_has_the_node_rebooted_after_its_job(
    cluster: VirtualCluster,
) -> None:
    node = cluster.pool_nodes("gpu")[0]
    name = cluster.slurm_name(node)
    job_id = submit(cluster, "-p", "gpu", "-N1", "-w", name)
    running_on(cluster, job_id)
    log_kernel(node, xid(119, "0000:61:00", GSP_TIMEOUT))
    wait_drained(cluster, name, "slurmstack:gpu-xid: 119 ")

    result = control(cluster)
    assert actions(result, name) == ["reboot"]
    pending = record(cluster, name)
    assert "REBOOT_REQUESTED" in pending["State"] and "DRAIN" in pending["State"]
    assert "; rebooting" in pending["Reason"]
    assert actions(control(cluster), name) == []  # asked once
    log = cluster.head.run("cat", CONTROLLER_LOG_PATH).stdout  # type: ignore[union-attr]
    assert f'"action": "reboot", "node": "{name}"' in log

    # Its job ends; slurmctld runs RebootProgram (stand-in "reboot"); the node comes back.
    release(cluster, job_id)
    wait_until(
        lambda: (
            record(cluster, name).get("State", "").split("+")[0] == "IDLE"
            and "REBOOT" not in record(cluster, name)["State"]
            and "DRAIN" not in record(cluster, name)["State"]
        ),
        f"{name} back after its reboot",
        timeout=90,
    )
    assert "reboot requested" in node.run("cat", "/var/log/vcluster/reboot.log").stdout
    assert job(cluster, job_id)["JobState"] == "COMPLETED"
    # The same XID back within a day of the reboot: this node is replaced instead.
    log_kernel(node, xid(119, "0000:61:00", GSP_TIMEOUT))
    wait_drained(cluster, name, "slurmstack:gpu-xid: 119 ")
    would = control(cluster, "control", "--dry-run")["would"]
    assert [(a["action"], a.get("why", "")[:31]) for a in would if a["node"] == name] == [
        ("replace", "gpu-xid:119: back within 1440 m")
    ]
    cluster.head.run("scontrol", "update", f"nodename={name}", "state=resume")  # type: ignore[union-attr]


def test_action_replace_is_honoured_and_the_next_trips_the_breaker_until_reset(
    cluster: VirtualCluster,
) -> None:
    """Pool cpu may have one replacement an hour (two-pools.yaml): an operator's Action:Replace
    is the one; the next trips the breaker, which holds until an operator resets it."""
    assert cluster.head is not None
    head = cluster.head
    (first,) = cluster.pool_nodes("cpu")
    name = cluster.slurm_name(first)
    head.run("scontrol", "update", f"nodename={name}", "state=drain", "reason=Action:Replace")
    assert actions(control(cluster), name) == ["replace"]
    assert record(cluster, name)["Reason"] == f"Action:Replace; replacing {first.instance_id}"
    cluster.settle_groups()
    # Its logs are copied at its next health check, once it sees its group terminating it.
    wait_for_logs(cluster, first)
    assert actions(control(cluster)) == ["complete"]
    second = replace_through_group(cluster, first)
    assert "var/log/slurm/slurmd.log" in bucket_keys(cluster, "cpu", first.instance_id)
    control(cluster)  # the first node's record: gone
    reap(cluster, name)

    other = cluster.slurm_name(second)
    head.run("scontrol", "update", f"nodename={other}", "state=drain", "reason=Action:Replace")
    tripped = control(cluster)
    assert actions(tripped) == ["suspend", "hold"]
    assert "breaker tripped: 1 replacements in 60 min" in tripped["actions"][0]["why"]
    held = record(cluster, other)["Reason"]
    assert held.startswith("Action:Replace; held: pool cpu's breaker is open since ")
    assert held.endswith("`slurmstack-node breaker reset cpu`")
    group = cluster.deployment.groups["cpu"]
    described = cluster.aws.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[group]
    )["AutoScalingGroups"][0]
    assert [p["ProcessName"] for p in described["SuspendedProcesses"]] == ["ReplaceUnhealthy"]
    assert "breaker tripped" in head.run("cat", CONTROLLER_LOG_PATH).stdout
    # It stays tripped: later passes, even once the replacement has left the window.
    state_path = "/var/spool/slurmctld/slurmstack/controller.json"
    state = json.loads(head.run("cat", state_path).stdout)
    state["replacements"] = {}
    head.write_file(state_path, json.dumps(state), "0600", "root:root")
    assert actions(control(cluster)) == []
    assert control(cluster, "breaker")["cpu"]["open"] is True

    control(cluster, "breaker", "reset", "cpu")
    assert actions(control(cluster), other) == ["replace"]
    cluster.settle_groups()
    wait_for_logs(cluster, second)
    assert actions(control(cluster)) == ["complete"]
    replace_through_group(cluster, second)
    control(cluster)
    reap(cluster, other)


def test_a_spot_notice_drains_the_node_saying_when(cluster: VirtualCluster) -> None:
    node = cluster.pool_nodes("gpu")[-1]
    name = cluster.slurm_name(node)
    notice = json.dumps({"action": "terminate", "time": "2025-06-15T12:02:00Z"})
    cluster.notice(node, SPOT_NOTICE, notice)
    try:
        drained, took = wait_drained(cluster, name, "slurmstack:spot-interruption: ")
    finally:
        cluster.notice(node, SPOT_NOTICE, None)
    print(f"\nday2: {name} drained {took:.1f} s after its spot notice")
    assert drained["Reason"] == (
        "slurmstack:spot-interruption: EC2 will terminate this spot instance at "
        "2025-06-15T12:02:00Z"
    )
    assert "DRAIN" in drained["State"]
    assert actions(control(cluster), name) == []  # EC2 takes it; nothing to repair
    cluster.head.run("scontrol", "update", f"nodename={name}", "state=resume")  # type: ignore[union-attr]


def test_a_terminating_instance_waits_for_its_running_job_then_goes(
    cluster: VirtualCluster,
) -> None:
    (node,) = cluster.pool_nodes("cpu")
    name = cluster.slurm_name(node)
    job_id = submit(cluster, "-p", "cpu", "-N1", "-w", name)
    running_on(cluster, job_id)
    cluster.begin_termination(node.instance_id)  # a scale-in, an instance refresh

    first = control(cluster)
    assert actions(first) == ["drain", "heartbeat"]
    assert record(cluster, name)["Reason"].startswith(
        f"slurmstack:scale-in: {cluster.deployment.groups['cpu']} is terminating "
        f"{node.instance_id}: draining"
    )
    assert actions(control(cluster)) == ["heartbeat"]  # kept alive while its job runs
    assert cluster.lifecycle_heartbeats(node.instance_id) == 2
    assert cluster.lifecycle_completed(node.instance_id) is None
    assert job(cluster, job_id)["JobState"] == "RUNNING"

    release(cluster, job_id)
    wait_until(
        lambda: job(cluster, job_id).get("JobState") == "COMPLETED", f"job {job_id} done", 60
    )
    assert job(cluster, job_id)["Restarts"] == "0"  # it ran to its end, where it was
    wait_for_logs(cluster, node)
    assert actions(control(cluster)) == ["complete"]
    replace_through_group(cluster, node)
    assert {"var/log/cloud-init-output.log", "var/log/slurm/slurmd.log"} <= bucket_keys(
        cluster, "cpu", node.instance_id
    )
    control(cluster)
    reap(cluster, name)


def test_a_healthy_cluster_gives_the_controller_nothing_to_do(cluster: VirtualCluster) -> None:
    """The checks pass on every node as booted (devices, nvidia-smi, EFA ports, file systems,
    the first boot's DCGM diagnostic), and a pass of the controller changes nothing."""
    records = cluster.wait_registered()
    assert all("DRAIN" not in r["State"] for r in records.values()), records
    assert actions(control(cluster)) == []
    for node in cluster.pool_nodes("gpu"):
        assert "diag -r 2" in node.run("cat", "/var/log/vcluster/dcgmi.log").stdout
    gpu_faults(cluster.pool_nodes("gpu")[0], None)


@pytest.mark.parametrize(
    ("fault", "reason", "remedy"),
    [
        ("efa-port-down", "slurmstack:efa-port: efa_0 port 1 is 1: DOWN", "reboot"),
        ("ecc", "slurmstack:gpu-ecc: GPU 2 ", "reboot"),
    ],
    ids=["efa-port", "gpu-ecc"],
)
def test_a_periodic_check_drains_a_node_with_its_reason_and_the_table_says_what_to_do(
    cluster: VirtualCluster, fault: str, reason: str, remedy: str
) -> None:
    """The cheap checks slurmd runs every interval, each fault on its own: an EFA port that
    is not ACTIVE, uncorrectable ECC errors. Each drains the node with its reason, and the
    controller's table (README) names the remedy; the fault cleared, the node comes back."""
    assert cluster.head is not None
    node = cluster.pool_nodes("gpu")[0]
    name = cluster.slurm_name(node)
    port = "/sys/class/infiniband/efa_0/ports/1/state"
    if fault == "efa-port-down":
        node.write_file(port, "1: DOWN\n", "0644", "root:root")
    else:
        gpu_faults(node, {"ecc": {"2": 3}})
    try:
        drained, took = wait_drained(cluster, name, reason)
        print(f"\nday2: {name} drained {took:.1f} s after {fault}: {drained['Reason']}")
        assert "DRAIN" in drained["State"]
        would = control(cluster, "control", "--dry-run")["would"]
        assert [a["action"] for a in would if a["node"] == name] == [remedy]
    finally:
        node.write_file(port, EFA_PORT_ACTIVE, "0644", "root:root")
        gpu_faults(node, None)
    cluster.head.run("scontrol", "update", f"nodename={name}", "state=resume")
    wait_until(
        lambda: "DRAIN" not in record(cluster, name).get("State", "DRAIN"),
        f"{name} back in service",
        timeout=DRAIN_SECONDS,
    )
