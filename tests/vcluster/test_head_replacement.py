"""The head node is replaced: a new instance (a new namespace) with the same Slurm state
volume. Workers find the new head node and what was running survives: a job that ran through
the replacement is still running, on the same node, under the same id; the next job gets a
later id; every worker is still registered and takes new jobs.

The new head node keeps the old one's address because the program launches the head on a
network interface of its own, which outlives the instance (slurmstack.stack.head_node): the
harness created that interface in moto from what the program registered, and the replacement
is launched on it. Workers, whose slurmd keeps the controller address it started with, find it
again without a restart.

When the interface itself is replaced (the head moves to another subnet), the head gets a new
address and its parameter follows. A worker's slurmd reads the parameter again before every
start (ExecStartPre `slurmstack-node head-address`): restarted, it finds the moved head.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from vcluster.harness import VirtualCluster, wait_until
from vcluster.harness.node import Node

pytestmark = pytest.mark.vcluster

SLURMD = "slurmstack-slurmd.service"
PID_FILE = f"/run/vcluster-units/{SLURMD}.pid"  # where the systemctl stand-in keeps it


def job_fields(cluster: VirtualCluster, job_id: str) -> dict[str, str]:
    assert cluster.head is not None
    out = cluster.head.run("scontrol", "show", "job", job_id, "-o", check=False).stdout
    return dict(f.split("=", 1) for f in out.split() if "=" in f)


def submit(cluster: VirtualCluster, *args: str) -> str:
    assert cluster.head is not None
    out = cluster.head.run("sbatch", "--parsable", "--chdir=/tmp", "--output=/dev/null", *args)
    return out.stdout.strip().split(";")[0]


def head_interface(cluster: VirtualCluster, instance_id: str) -> str:
    ec2 = cluster.aws.client("ec2")
    found = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    return str(found["NetworkInterfaces"][0]["NetworkInterfaceId"])


def known_head_address(node: Node) -> str:
    """The head address this worker's slurmd starts with (node.env, as the agent wrote it)."""
    env = node.run("cat", "/etc/slurmstack/node.env").stdout
    return dict(line.split("=", 1) for line in env.splitlines() if "=" in line)[
        "SLURMSTACK_HEAD_ADDRESS"
    ]


def slurmd_command(node: Node) -> list[str]:
    pid = node.run("cat", PID_FILE).stdout.strip()
    return node.run("cat", f"/proc/{pid}/cmdline").stdout.split("\0")


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
        # The program's interface, which outlived the old instance: the same address.
        assert head_interface(vcluster, new.instance_id) == vcluster.deployment.head_interface
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
            # Left as found: the job's node done completing it (its slurmd idle).
            wait_until(
                lambda: (
                    not any(
                        "COMPLETING" in r.get("State", "") for r in vcluster.node_records().values()
                    )
                ),
                f"job {job} to leave its node",
                timeout=30,
            )


def test_a_head_node_at_a_new_address_is_found_at_the_next_slurmd_start(
    vcluster: VirtualCluster,
) -> None:
    old = vcluster.head
    assert old is not None
    workers = list(vcluster.workers.values())
    assert {known_head_address(n) for n in workers} == {old.address}

    new = vcluster.replace_head(new_interface=True)
    assert new.address != old.address
    assert head_interface(vcluster, new.instance_id) == vcluster.deployment.head_interface
    # Nothing on a worker changed yet: its slurmd still has the address it started with.
    assert {known_head_address(n) for n in workers} == {old.address}

    # What a reboot of each worker does (or an operator's restart).
    with ThreadPoolExecutor(max_workers=len(workers)) as pool:
        list(pool.map(lambda n: n.run("systemctl", "restart", SLURMD, timeout=90), workers))
    for node in workers:
        assert known_head_address(node) == new.address
        # As slurmd resolves SlurmctldHost (getaddrinfo, /etc/hosts first; IPv4 only, as a
        # lookup of the name's IPv6 address would go on to DNS, which no node here has).
        found = node.run("getent", "ahostsv4", f"{vcluster.plan.name}-head").stdout.split()
        assert found[0] == new.address
        command = slurmd_command(node)
        assert command[command.index("--conf-server") + 1] == f"{new.address}:6817"
        log = node.run("cat", f"/var/log/vcluster/{SLURMD}.log").stdout
        assert f"head-address: the head node is at {new.address} (was {old.address})" in log
    records = vcluster.wait_registered()
    assert set(records) == {vcluster.slurm_name(n) for n in workers}
    hosts = new.run("srun", "-p", "gpu", "-N2", "-t", "1", "--chdir=/tmp", "hostname")
    assert sorted(hosts.stdout.split()) == sorted(
        vcluster.slurm_name(n) for n in vcluster.pool_nodes("gpu")
    )
