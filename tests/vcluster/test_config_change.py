"""A configuration change reaches slurmctld and every node without a restart.

The definition changes a partition setting (the default partition moves from gpu to cpu); the
changed program is deployed the way `pulumi up` deploys it (new store objects and manifest, the
manifest parameter updated) and the apply-config document runs on the head node as its
association would run it: the node agent's sync-config, then `scontrol reconfigure`.
"""

from __future__ import annotations

import copy

import pytest

from vcluster.harness import VirtualCluster, wait_until

pytestmark = pytest.mark.vcluster

PID_FILE = "/run/vcluster-units/{}.pid"  # where the systemctl stand-in keeps a unit's main pid
UNIT_LOG = "/var/log/vcluster/{}.log"  # and a unit's output, its starts noted


def partition_default(cluster: VirtualCluster, partition: str) -> str:
    assert cluster.head is not None
    out = cluster.head.run("scontrol", "show", "partition", partition, "-o").stdout
    return dict(f.split("=", 1) for f in out.split() if "=" in f)["Default"]


def daemon_pids(cluster: VirtualCluster) -> dict[str, str]:
    """Each slurmd's main pid, and how many times slurmctld's unit was started: Slurm 24.05
    and later reconfigure slurmctld by executing a new process of it (keeping its listening
    sockets), which it names to systemd (MAINPID=, Type=notify), so its pid changes though
    nothing restarts it."""
    assert cluster.head is not None
    log = cluster.head.run("cat", UNIT_LOG.format("slurmctld.service")).stdout
    pids = {"slurmctld starts": str(log.count("starting /usr/sbin/slurmctld"))}
    for node in cluster.workers.values():
        unit = "slurmstack-slurmd.service"
        pids[cluster.slurm_name(node)] = node.run("cat", PID_FILE.format(unit)).stdout
    return pids


def node_slurm_conf(cluster: VirtualCluster, node_name: str) -> str:
    """The slurm.conf a configless slurmd is running with (its cache, linked from
    /run/slurm/conf)."""
    node = next(n for n in cluster.workers.values() if cluster.slurm_name(n) == node_name)
    return node.run("cat", "/run/slurm/conf/slurm.conf").stdout


def test_a_partition_setting_reaches_slurmctld_and_nodes_without_restart(
    vcluster: VirtualCluster,
) -> None:
    assert vcluster.head is not None
    original = vcluster.definition
    changed = copy.deepcopy(original)
    changed["slurm"]["default_partition"] = "cpu"
    assert (partition_default(vcluster, "gpu"), partition_default(vcluster, "cpu")) == ("YES", "NO")
    pids = daemon_pids(vcluster)
    names = [n for n in pids if n != "slurmctld starts"]
    try:
        out = vcluster.apply_config(changed)
        assert '"/etc/slurm/slurm.conf"' in out  # sync-config wrote the new file
        assert (partition_default(vcluster, "gpu"), partition_default(vcluster, "cpu")) == (
            "NO",
            "YES",
        )
        # Every configless slurmd got the new slurm.conf from slurmctld.
        for name in names:
            wait_until(
                lambda name=name: (
                    "PartitionName=cpu Nodes=cpu_nodes Default=YES"
                    in node_slurm_conf(vcluster, name)
                ),
                f"the new slurm.conf on {name}",
                timeout=30,
            )
        # A job that names no partition now goes to cpu.
        host = vcluster.head.run("srun", "-N1", "-t", "1", "--chdir=/tmp", "hostname").stdout
        assert host.strip().startswith("cpu-")
        # Nothing restarted (slurmctld's own re-execution aside: it is active at the pid it named).
        assert daemon_pids(vcluster) == pids
        named = vcluster.head.run("cat", PID_FILE.format("slurmctld.service")).stdout
        assert vcluster.head.run("ps", "-o", "comm=", "-p", named).stdout.strip() == "slurmctld"
    finally:
        vcluster.apply_config(original)
    assert partition_default(vcluster, "gpu") == "YES"
