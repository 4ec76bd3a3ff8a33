"""A definition with two pools boots: the head node and every instance its Auto Scaling groups
launched run their rendered user data, every step through the bootstrap runner, and each worker
registers in its pool's partition, under the name its address gives it, with its pool's feature,
GRES, CPUs and memory. With SLURMSTACK_VCLUSTER_SLURM=image, every node runs the Slurm the
image's own build step made of the pinned source (the bake rehearsal's build, laid over the
node's /usr: stand-in "slurm-version"); with =record, Debian's build of the version of
record."""

from __future__ import annotations

import pytest

from slurmstack import contract
from vcluster.harness import VirtualCluster
from vcluster.harness.cloudinit import parse
from vcluster.harness.node_slurm import SLURM_MODE_ENV, assert_nodes_run

pytestmark = pytest.mark.vcluster


def test_every_node_registers_in_its_partition_with_its_gres(vcluster: VirtualCluster) -> None:
    records = vcluster.node_records()
    workers = list(vcluster.workers.values())
    assert sorted(n.role for n in workers) == ["cpu", "gpu", "gpu"]  # the pools' counts
    assert set(records) == {vcluster.slurm_name(n) for n in workers}
    for node in workers:
        pool = vcluster.plan.pool(node.role)
        record = records[vcluster.slurm_name(node)]
        assert record["Partitions"] == pool.partition
        assert record["AvailableFeatures"] == pool.feature
        assert record["Gres"] == (pool.gpu.gres if pool.gpu else "(null)")
        assert record["CPUTot"] == str(pool.cpus)
        assert record["RealMemory"] == str(pool.real_memory_mib)
        assert record["State"] == "IDLE+DYNAMIC_NORM"
        # slurmctld reaches the node at the address moto gave its instance.
        assert record["NodeAddr"] == node.address
        # The node named itself (params): its hostname is its Slurm name.
        assert node.run("hostname").stdout.strip() == vcluster.slurm_name(node)


def test_a_gpu_job_gets_the_devices_it_asked_for(vcluster: VirtualCluster) -> None:
    assert vcluster.head is not None
    gpu_names = {vcluster.slurm_name(n) for n in vcluster.pool_nodes("gpu")}
    out = vcluster.head.run(
        "srun", "-p", "gpu", "-N1", "--gres=gpu:l40s:2", "-t", "1", "--chdir=/tmp",
        "sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES $(hostname)"',
    ).stdout.split()  # fmt: skip
    assert out[0] == "0,1"
    assert out[1] in gpu_names


def test_the_head_node_runs_from_the_config_store(vcluster: VirtualCluster) -> None:
    """slurmctld runs the slurm.conf the manifest names, with its state on the state mount."""
    assert vcluster.head is not None
    head = vcluster.head
    config = head.run("scontrol", "show", "config").stdout
    assert "StateSaveLocation       = /var/spool/slurmctld/state" in config
    assert head.run("mountpoint", "-q", "/var/spool/slurmctld", check=False).returncode == 0
    assert head.run("systemctl", "is-active", "slurmctld").stdout.strip() == "active"
    assert (
        head.run("systemctl", "is-enabled", "slurmstack-controller.timer").stdout.strip()
        == "enabled"
    )


def test_every_node_booted_through_the_bootstrap_runner(vcluster: VirtualCluster) -> None:
    """The runner's done marker on every node and no failed marker: every step ran through it,
    the image contract check first (nothing is installed at boot)."""
    assert vcluster.head is not None
    for node in [vcluster.head, *vcluster.workers.values()]:
        label = node.label()
        assert node.run("test", "-s", contract.BOOTSTRAP_DONE, check=False).returncode == 0, label
        assert node.run("test", "-e", contract.BOOTSTRAP_FAILED, check=False).returncode, label
        runcmd = parse(node.instance.user_data).runcmd
        steps = [e for e in runcmd if isinstance(e, tuple) and e[0] != "systemctl"]
        assert steps[0][:2] == ("slurmstack-bootstrap", "check"), label


def test_every_node_runs_the_slurm_build_it_was_given(vcluster: VirtualCluster) -> None:
    """slurmd -V on every node (and slurmctld's on the head, and the version slurmctld reports
    for each registered slurmd) is the release the cluster is written for, from its layer (the
    image's build, or Debian's of the version of record), not the host's Slurm: the daemons are
    the layer's files (same bytes)."""
    if vcluster.slurm.usr_layer is None:
        pytest.skip(f"the nodes run this machine's Slurm ({SLURM_MODE_ENV} unset)")
    assert_nodes_run(vcluster)
