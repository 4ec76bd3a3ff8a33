"""From a deployed cluster to a first multi-node training job, on the virtual cluster: the
rendered jobs as the head node installed them from the config store, submitted to the real
slurmctld and run by the real slurmds.

- Slurm accepts every rendered job (`sbatch --test-only`).
- The directories containers need exist on every worker, and the ECR token unit and a user's
  enroot credentials work through the node's instance role (moto's ECR).
- The rendered DDP job trains across two nodes with srun + torchrun (Debian's python3-torch:
  CPU, gloo), checkpoints to the shared file system, is requeued (`scontrol requeue`) and
  resumes from its checkpoint; every rank ends with the same weights.
- The rendered MPI job runs an all-reduce across three nodes through PMIx.
- `slurmstack-accept`, run by an ordinary user, gives a verdict per pool; with a slow node
  (stand-in "workload-tools") it fails the pool, finds the node with two-node runs, and, run by
  root, drains it with the documented reason.

The MPI and acceptance scenarios need three nodes in one pool: the GPU pool's group is scaled
to three for them (one more boot) and back to two after, its extra node's record deleted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator

import pytest

from slurmstack.contract import (
    ECR_PASSWORD_FILE,
    ECR_REGISTRY_FILE,
    ECR_TOKEN_DIR,
    ECR_TOKEN_SERVICE,
    JOBS_DIR,
    REASON_PREFIX,
)
from slurmstack.render.jobs import head_jobs_files
from vcluster.harness import VirtualCluster, wait_until
from vcluster.harness.node import Node
from vcluster.harness.standins import WORKLOAD_TOOL, WORKLOAD_TOOL_PATHS

pytestmark = [pytest.mark.vcluster, pytest.mark.workload]


@pytest.fixture(scope="module")
def vcluster(pmix_vcluster: VirtualCluster) -> VirtualCluster:
    """MPI jobs go through PMIx: a cluster whose Slurm has it (conftest.pmix_vcluster)."""
    return pmix_vcluster


# The ranks run Debian's python3 (python3-torch is a Debian package, not in the venv). Debian
# 12's torch 1.13 on Python 3.11 cannot parse torchrun's default "--redirects 0 --tee 0" (its
# Std IntFlag has no member 0 on 3.11): stdout is redirected and teed instead, which prefixes
# every line with its rank ("[default0]:").
DEBIAN_TORCH = ("PYTHON=/usr/bin/python3", "TORCHRUN_ARGS=--redirects 1 --tee 1")
# What torchrun's workers wrote (torchrun keeps it in /tmp/torchelastic_*: --redirects).
TORCHRUN_LOGS = "for f in /tmp/torchelastic_*/*/attempt_*/*/*.log; do echo $f; tail -n 20 $f; done"
USER = "nobody"  # an ordinary user (no Slurm operator), in every node's /etc/passwd


def require(condition: bool, why: str) -> None:
    if not condition:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {why}")
        pytest.skip(why)


def head(vcluster: VirtualCluster) -> Node:
    assert vcluster.head is not None
    return vcluster.head


def job_state(node: Node, job: str) -> str:
    out = node.run("scontrol", "-o", "show", "job", job, check=False).stdout
    return next((f.split("=", 1)[1] for f in out.split() if f.startswith("JobState=")), "")


def events(text: str) -> list[dict]:
    """The JSON lines the DDP program prints (after torchrun's "[default0]:" prefix)."""
    out = []
    for line in text.splitlines():
        if "{" in line:
            try:
                out.append(json.loads(line[line.index("{") :]))
            except ValueError:
                continue
    return out


def waited(
    vcluster: VirtualCluster,
    job: str,
    log: str,
    done: Callable[[], bool],
    what: str,
    timeout: float,
) -> None:
    """wait_until, and on a timeout the job's state and output, and the workers' processes
    and Slurm logs, in the failure."""
    try:
        wait_until(done, f"job {job} {what}", timeout)
    except TimeoutError as exc:
        node = head(vcluster)
        shown = node.run("scontrol", "-o", "show", "job", job, check=False).stdout
        output = node.run("cat", log, check=False).stdout[-4000:]
        workers = [
            f"{w.label()}\n{w.run('ps', '-eo', 'pid,ppid,stat,args', check=False).stdout}"
            f"\n{w.run('sh', '-c', TORCHRUN_LOGS, check=False).stdout}\n{w.logs(tail=2000)}"
            for w in vcluster.pool_nodes("gpu")
        ]
        raise AssertionError("\n".join([str(exc), shown, output, *workers])) from None


def test_slurm_accepts_every_rendered_job(vcluster: VirtualCluster) -> None:
    node = head(vcluster)
    rendered = sorted(p for p in head_jobs_files(vcluster.plan) if p.endswith(".sbatch"))
    installed = sorted(node.run("find", JOBS_DIR, "-name", "*.sbatch").stdout.split())
    assert installed == rendered  # from the config store, by the head's own sync
    assert len(rendered) == 7  # gpu: check, all-reduce, DDP, MPI; cpu: check, DDP, MPI
    for job in rendered:
        result = node.run("sbatch", "--test-only", job, check=False)
        assert result.returncode == 0 and " to start at " in result.stderr, (job, result.stderr)


def test_containers_have_their_directories_and_pull_from_ecr(vcluster: VirtualCluster) -> None:
    gpu, cpu = vcluster.pool_nodes("gpu")[0], vcluster.pool_nodes("cpu")[0]
    # Made before slurmd started (its unit's job-dirs step); enroot.conf names them.
    for node, root in ((gpu, "/scratch/enroot"), (cpu, "/var/lib/enroot")):
        for path in ("/run/enroot", f"{root}/data", f"{root}/cache", f"{root}/tmp"):
            assert node.run("stat", "-c", "%a", path).stdout.strip() == "1777", (node.role, path)
        assert (
            f"ENROOT_DATA_PATH {root}/data/user-$(id -u)"
            in node.run("cat", "/etc/enroot/enroot.conf").stdout
        )
    assert head(vcluster).run("stat", "-c", "%a", "/fsx/checkpoints").stdout.strip() == "1777"
    # The token unit as its timer runs it (root, the instance role, moto's ECR) ...
    gpu.run("systemctl", "start", ECR_TOKEN_SERVICE)
    try:
        registry = gpu.run("cat", ECR_REGISTRY_FILE).stdout.strip()
        assert registry.endswith(f".dkr.ecr.{vcluster.plan.region}.amazonaws.com")
        assert gpu.run("stat", "-c", "%a", ECR_PASSWORD_FILE).stdout.strip() == "644"
        # ... and an ordinary user's enroot credentials, which read it at each import.
        home = "/tmp/workload-ecr-home"
        gpu.run("install", "-d", "-o", USER, home)
        said = gpu.run("runuser", "-u", USER, "--", "env", f"HOME={home}", "slurmstack-ecr-login")
        assert f"wrote {home}/.config/enroot/.credentials" in said.stdout
        credentials = gpu.run("cat", f"{home}/.config/enroot/.credentials").stdout
        assert credentials == f"machine {registry} login AWS password $(cat {ECR_PASSWORD_FILE})\n"
        password = gpu.run("runuser", "-u", USER, "--", "sh", "-c", f"cat {ECR_PASSWORD_FILE}")
        assert password.stdout  # readable by the job user
    finally:
        gpu.run("rm", "-rf", "/tmp/workload-ecr-home", ECR_TOKEN_DIR)


def test_ddp_trains_on_two_nodes_checkpoints_and_resumes_after_a_requeue(
    vcluster: VirtualCluster,
) -> None:
    require(
        subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode
        == 0,
        "PyTorch for /usr/bin/python3 is missing (apt: python3-torch)",
    )
    node = head(vcluster)
    # 24 steps of a second each: time to requeue the job mid-run.
    settings = (*DEBIAN_TORCH, "NPROC_PER_NODE=1", "STEPS=24", "CHECKPOINT_EVERY=4",
                "TRAIN_ARGS=--step-seconds 1")  # fmt: skip
    job = node.run(
        "env", *settings, "sbatch", "--parsable", "--output=/home/workload-ddp-%j.out",
        f"{JOBS_DIR}/gpu/ddp.sbatch",
    ).stdout.strip()  # fmt: skip
    log = f"/home/workload-ddp-{job}.out"
    checkpoint = f"/fsx/checkpoints/root/ddp-gpu-{job}/checkpoint.pt"
    try:
        # The first attempt trains and checkpoints (on the shared file system) ...
        def checkpointed() -> bool:
            return node.run("test", "-s", checkpoint, check=False).returncode == 0

        waited(vcluster, job, log, checkpointed, "to write its first checkpoint", 150)
        # ... and is requeued mid-run, as after a node failure or a preemption.
        node.run("scontrol", "requeue", job)
        wait_until(lambda: job_state(node, job) == "PENDING", f"job {job} requeued", timeout=30)
        # Slurm starts it again after AuthInfo's cred_expire (stand-in "requeue-delay": 10 s
        # here, 120 s by default).
        finished = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")
        waited(vcluster, job, log, lambda: job_state(node, job) in finished, "to finish", 180)
        text = node.run("cat", log).stdout
        assert job_state(node, job) == "COMPLETED", text[-3000:]
    finally:
        node.run("scancel", job, check=False)
    found = events(text)
    starts = [e for e in found if e["event"] == "start"]
    assert [s["restart_count"] for s in starts] == [0, 1]
    assert starts[0]["resumed_from"] is None
    resumed = starts[1]["resumed_from"]
    assert resumed is not None and 4 <= resumed < 24 and resumed % 4 == 0
    # The second attempt starts after the checkpoint: no step of it is taken twice.
    second = [e["step"] for e in found[found.index(starts[1]) :] if e["event"] == "checkpoint"]
    assert second and second[0] == resumed + 4, text
    done = found[-1]
    assert done["event"] == "done" and done["steps"] == 24 and done["world_size"] == 2
    assert done["identical"] and len(done["weights_sha256"]) == 2
    assert len(set(done["weights_sha256"])) == 1
    assert f"attempt 2 of job {job}" in text
    assert node.run("test", "-s", checkpoint, check=False).returncode == 0
    node.run("rm", "-rf", log, checkpoint.rsplit("/", 1)[0])


@pytest.fixture(scope="module")
def gpu_pool_of_three(vcluster: VirtualCluster) -> Iterator[list[Node]]:
    """The GPU pool's group at three instances for the scenarios below, back at two after."""
    group = vcluster.deployment.groups["gpu"]
    autoscaling = vcluster.aws.client("autoscaling")
    before = set(vcluster.group_instances())
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=group, MaxSize=3, DesiredCapacity=3)
    new = wait_until(
        lambda: sorted(set(vcluster.group_instances()) - before), "a third GPU instance", 30
    )
    extra = vcluster.boot(new)[0]
    try:
        vcluster.wait_registered()
        yield vcluster.pool_nodes("gpu")
    finally:
        name = vcluster.slurm_name(extra)
        vcluster.kill(extra)
        autoscaling.terminate_instance_in_auto_scaling_group(
            InstanceId=extra.instance_id, ShouldDecrementDesiredCapacity=True
        )
        autoscaling.update_auto_scaling_group(AutoScalingGroupName=group, MaxSize=2)

        def deleted() -> bool:
            done = head(vcluster).run("scontrol", "delete", f"NodeName={name}", check=False)
            return done.returncode == 0 or name not in vcluster.node_records()

        wait_until(deleted, f"the record of {name} deleted", timeout=60, poll=2)


@pytest.fixture(scope="module")
def workload_tools(vcluster: VirtualCluster, gpu_pool_of_three: list[Node]) -> Iterator[None]:
    """nvidia-smi, fi_info and all_reduce_perf (stand-in "workload-tools") in every worker."""
    workers = list(vcluster.workers.values())
    for node in workers:
        for path in WORKLOAD_TOOL_PATHS:
            node.run("mkdir", "-p", path.rsplit("/", 1)[0])
            node.run("ln", "-sf", str(WORKLOAD_TOOL), path)
    yield
    for node in workers:
        if node.alive:
            node.run("rm", "-f", *WORKLOAD_TOOL_PATHS)


def test_mpi_allreduce_across_three_nodes_through_pmix(
    vcluster: VirtualCluster, gpu_pool_of_three: list[Node]
) -> None:
    require(shutil.which("mpicc") is not None, "mpicc is missing (apt: libopenmpi-dev)")
    node = head(vcluster)
    job = node.run(
        "sbatch", "--parsable", "--wait", "--nodes=3", "--output=/home/workload-mpi-%j.out",
        f"{JOBS_DIR}/gpu/mpi.sbatch", timeout=150,
    ).stdout.strip()  # fmt: skip
    text = node.run("cat", f"/home/workload-mpi-{job}.out").stdout
    node.run("rm", "-f", f"/home/workload-mpi-{job}.out")
    result = json.loads(text.strip().splitlines()[-1])
    assert result["ranks"] == 3 and result["ok"] is True
    assert result["total"] == result["expected"]
    names = {vcluster.slurm_name(n) for n in gpu_pool_of_three}  # each node's hostname
    assert sorted(result["hosts"]) == sorted(names) and len(names) == 3


def accept(
    vcluster: VirtualCluster, *args: str, user: str | None = USER, slow: str = ""
) -> tuple[int, str]:
    command = ["env", f"VCLUSTER_SLOW_NODES={slow}", "slurmstack-accept", *args]
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    result = head(vcluster).run(*command, timeout=240, check=False)
    return result.returncode, result.stdout + result.stderr


def test_acceptance_gives_a_verdict_per_pool_and_drains_a_slow_node(
    vcluster: VirtualCluster, gpu_pool_of_three: list[Node], workload_tools: None
) -> None:
    names = sorted(
        (vcluster.slurm_name(n) for n in gpu_pool_of_three), key=lambda n: int(n.split("-")[1])
    )
    # An ordinary user: every step is their own job; both pools pass.
    code, out = accept(vcluster, "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["cluster"] == vcluster.plan.name and report["ok"] is True
    gpu, cpu = report["pools"]
    assert (gpu["pool"], gpu["verdict"], gpu["nodes"]) == ("gpu", "pass", names)
    assert gpu["node_check"] == {"ok": True, "failed": {}, "no_answer": []}
    assert gpu["fabric"]["detail"] == "11.2 GB/s busbw, at least 6.25"
    assert gpu["fabric"]["basis"].startswith("derived: 50% of the EFA line rate")
    assert (cpu["pool"], cpu["verdict"]) == ("cpu", "pass")
    # A slow node: the pool fails; two-node runs find it; the user may not drain it.
    slow = names[-1]
    code, out = accept(vcluster, "--json", "--pool", "gpu", "--bisect", slow=slow)
    assert code == 1
    (gpu,) = json.loads(out)["pools"]
    assert gpu["verdict"] == "fail" and gpu["fabric"]["detail"] == "2.90 GB/s busbw, below 6.25"
    assert gpu["bisect"]["slow"] == [slow] and gpu["bisect"]["waves"] == 2
    (entry,) = gpu["bisect"]["drained"]
    assert not entry["drained"] and entry["command"].startswith(f"scontrol update NodeName={slow}")
    reason = f"{REASON_PREFIX}nccl-allreduce: 2.90 GB/s busbw, below 6.25 (pair with {names[0]})"
    assert entry["reason"] == reason
    assert "DRAIN" not in vcluster.node_records()[slow]["State"]
    # Root (an operator) runs it: the node is drained with the documented reason.
    try:
        code, out = accept(vcluster, "--pool", "gpu", "--bisect", user=None, slow=slow)
        queue = head(vcluster).run("squeue", "-a", "-o", "%i %u %T %j %N %r", check=False).stdout
        assert code == 1 and f"drained {slow}: {reason}" in out, out + queue
        record = vcluster.node_records()[slow]
        assert "DRAIN" in record["State"] and record["Reason"] == reason
    finally:
        head(vcluster).run("scontrol", "update", f"NodeName={slow}", "State=RESUME", check=False)
    vcluster.wait_registered()
