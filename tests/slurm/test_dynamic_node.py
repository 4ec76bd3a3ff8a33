"""End to end: munged, slurmctld and one `slurmd -Z` started with a pool's rendered
arguments (the ExecStart of the rendered slurmstack-slurmd.service); the node registers in
its partition with its feature and GRES, and srun runs jobs on it."""

from __future__ import annotations

import shlex

import pytest

from slurm.conftest import Cluster, make_devices, run, wait_for, write_config
from slurmstack.contract import SLURMCTLD_PORT, TASK_PROLOG_PATH, node_name, node_name_prefix
from slurmstack.render import SLURMD_UNIT_PATH, head_files, pool_files
from support.examples import example_plan

pytestmark = pytest.mark.slurm


def slurmd_command(unit: str, cluster: Cluster, name: str) -> list[str]:
    """The rendered ExecStart with what node.env supplies on a node (head address, node
    name) and this test's controller port."""
    line = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
    line = line.removeprefix("ExecStart=")
    line = line.replace(
        f"${{SLURMSTACK_HEAD_ADDRESS}}:{SLURMCTLD_PORT}", f"127.0.0.1:{cluster.ctld_port}"
    )
    line = line.replace("${SLURMSTACK_NODE_NAME}", name)
    assert "$" not in line, line
    return shlex.split(line)


def node_fields(cluster: Cluster, name: str) -> dict[str, str]:
    text = cluster.scontrol("show", "node", "-o", name, check=False).stdout
    return dict(f.split("=", 1) for f in text.split() if "=" in f)


def start_node(cluster: Cluster, example: str, pool_name: str) -> tuple[str, object]:
    plan = example_plan(example)
    pool = plan.pool(pool_name)
    files = pool_files(plan, pool)
    write_config(cluster, head_files(plan), files[TASK_PROLOG_PATH])
    if pool.gpu is not None:
        make_devices(cluster, "nvidia", pool.gpu.count)
    cluster.start_munged()
    cluster.start_slurmctld()
    name = node_name(node_name_prefix(pool.name), "10.42.7.19")
    cmd = slurmd_command(files[SLURMD_UNIT_PATH], cluster, name)
    assert cmd[:4] == ["/usr/sbin/slurmd", "-D", "-s", "-Z"]
    cluster.start_slurmd(cmd, name)
    wait_for(
        lambda: node_fields(cluster, name).get("State", "").startswith("IDLE"),
        f"node {name} idle",
        cluster,
    )
    return name, pool


def test_cpu_pool_node_joins_and_runs_a_job(cluster) -> None:
    name, pool = start_node(cluster, "cpu-hpc", "batch")
    fields = node_fields(cluster, name)
    assert fields["Partitions"] == "batch"
    assert fields["AvailableFeatures"] == "batch"
    assert fields["Gres"] == "(null)"
    assert fields["CPUTot"] == str(pool.cpus)
    assert fields["RealMemory"] == str(pool.real_memory_mib)
    assert "DYNAMIC_NORM" in fields["State"]
    out = run(["srun", "-p", "batch", "-N1", "-t", "1", "hostname"], cluster).stdout
    assert out.strip()
    # The configless slurmd fetched the controller's files, plugstack.conf included.
    cache = cluster.root / "spool" / name / "conf-cache"
    assert {"slurm.conf", "gres.conf", "cgroup.conf", "plugstack.conf"} <= {
        p.name for p in cache.iterdir()
    }
    # No GPU: a GPU request cannot be satisfied in this partition.
    bad = run(
        ["srun", "-p", "batch", "--gres=gpu:1", "-t", "1", "--immediate=5", "true"],
        cluster,
        check=False,
    )
    assert bad.returncode != 0


def test_gpu_pool_node_joins_and_runs_a_gpu_job(cluster) -> None:
    name, _pool = start_node(cluster, "p5-training", "train")
    fields = node_fields(cluster, name)
    assert fields["Partitions"] == "train"
    assert fields["AvailableFeatures"] == "train"
    assert fields["Gres"] == "gpu:h100:8"
    assert fields["CPUTot"] == "192"
    out = run(
        [
            "srun",
            "-p",
            "train",
            "--gres=gpu:h100:1",
            "-t",
            "1",
            "sh",
            "-c",
            'echo "$CUDA_VISIBLE_DEVICES $FI_PROVIDER $FI_EFA_USE_DEVICE_RDMA"; hostname',
        ],
        cluster,
    ).stdout.split()
    # One GPU bound; the pool's libfabric environment came from the rendered TaskProlog.
    assert out[:3] == ["0", "efa", "1"]
    both = run(
        [
            "srun",
            "-p",
            "train",
            "--gres=gpu:h100:8",
            "-t",
            "1",
            "sh",
            "-c",
            "echo $CUDA_VISIBLE_DEVICES",
        ],
        cluster,
    ).stdout.strip()
    assert both == "0,1,2,3,4,5,6,7"
