"""The rendered jobs: filled in per pool (partition, GPUs, fabric, mounts, threshold), valid
shell, Python and C, on the head node in full and on a pool's nodes only what their steps run.
(Slurm itself accepts them: tests/vcluster/test_workload.py submits each with --test-only.)"""

from __future__ import annotations

import os
import py_compile
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from slurmstack.contract import (
    ACCEPT_PATH,
    ACCEPTANCE_PATH,
    ECR_LOGIN_PATH,
    JOBS_DIR,
    JOBS_LIB_DIR,
    Acceptance,
    load_document,
)
from slurmstack.render import role_files
from slurmstack.render.jobs import head_jobs_files, library
from support.examples import EXAMPLE_IDS, example_plan
from support.stack import example, plan_of

pytestmark = pytest.mark.workload


def sbatch_options(text: str) -> dict[str, str]:
    return dict(m.groups() for m in re.finditer(r"^#SBATCH --([a-z-]+)(?:=(\S+))?$", text, re.M))


def test_each_pool_gets_its_jobs_filled_in() -> None:
    plan = example_plan("p5-training")
    files = head_jobs_files(plan)
    train = sbatch_options(files[f"{JOBS_DIR}/train/nccl-allreduce.sbatch"])
    assert train == {"job-name": "nccl-allreduce-train", "partition": "train", "nodes": "16",
                     "ntasks-per-node": "8", "gpus-per-node": "8", "exclusive": None,
                     "time": "00:30:00", "output": "%x-%j.out"}  # fmt: skip
    assert (
        "Passes at 355.0 GB/s bus bandwidth or more at 2147483648 B"
        in files[f"{JOBS_DIR}/train/nccl-allreduce.sbatch"]
    )
    ddp = files[f"{JOBS_DIR}/dev/ddp.sbatch"]
    options = sbatch_options(ddp)
    assert options["gpus-per-node"] == "4" and options["nodes"] == "2"
    assert {"requeue", "open-mode"} <= set(options) and options["open-mode"] == "append"
    assert (
        'CHECKPOINT_DIR="${CHECKPOINT_DIR:-/fsx/checkpoints/$user/$SLURM_JOB_NAME-$SLURM_JOB_ID}"'
        in ddp
    )
    assert 'NPROC_PER_NODE="${NPROC_PER_NODE:-4}"' in ddp
    # Containers see Lustre and the jobs (the home comes with ENROOT_MOUNT_HOME).
    assert f'--container-mounts="/fsx:/fsx,{JOBS_DIR}:{JOBS_DIR}:ro"' in ddp
    mpi = files[f"{JOBS_DIR}/train/mpi.sbatch"]
    assert 'mpi-allreduce.sh "/opt/amazon/openmpi/bin"' in mpi and "srun --mpi=pmix" in mpi
    check = sbatch_options(files[f"{JOBS_DIR}/train/node-check.sbatch"])
    assert check["nodes"] == "16" and check["ntasks-per-node"] == "1"
    readme = files[f"{JOBS_DIR}/README"]
    assert "pool train (p5.48xlarge, partition train):" in readme and "slurmstack-accept" in readme


def test_jobs_of_placed_pools_ask_for_one_leaf_switch_first() -> None:
    files = head_jobs_files(example_plan("p5-training"))
    # train (p5: EC2 reports its network nodes) is placed; dev (g6e) too; both get --switches.
    assert sbatch_options(files[f"{JOBS_DIR}/train/ddp.sbatch"])["switches"] == "1@05:00"
    allreduce = files[f"{JOBS_DIR}/train/nccl-allreduce.sbatch"]
    assert "switches" not in sbatch_options(allreduce)  # the whole pool: every leaf it has
    assert f"sbatch --nodes=2 --switches=1 {JOBS_DIR}/train/nccl-allreduce.sbatch" in allreduce
    # A pool EC2 reports nothing for (c7i), and any pool on a Slurm without per-node topology.
    cpu = head_jobs_files(example_plan("cpu-hpc"))
    assert "switches" not in sbatch_options(cpu[f"{JOBS_DIR}/batch/ddp.sbatch"])
    assert sbatch_options(cpu[f"{JOBS_DIR}/mpi/ddp.sbatch"])["switches"] == "1@05:00"
    definition = example("p5-training")
    definition["slurm"] = {**definition.get("slurm", {}), "version": "24.11.5"}
    older = head_jobs_files(plan_of(definition))
    assert "switches" not in older[f"{JOBS_DIR}/train/ddp.sbatch"]


def test_cpu_and_neuron_pools_get_what_runs_on_them() -> None:
    cpu = head_jobs_files(example_plan("cpu-hpc"))
    assert (
        f"{JOBS_DIR}/mpi/mpi.sbatch" in cpu and f"{JOBS_DIR}/mpi/nccl-allreduce.sbatch" not in cpu
    )
    assert "gpus-per-node" not in sbatch_options(cpu[f"{JOBS_DIR}/batch/ddp.sbatch"])
    # The EFA installer's Open MPI, as on GPU nodes (image_pins.json, efa_installer).
    assert 'mpi-allreduce.sh "/opt/amazon/openmpi/bin"' in cpu[f"{JOBS_DIR}/mpi/mpi.sbatch"]
    trn = head_jobs_files(example_plan("trainium"))
    jobs = sorted(p.rsplit("/", 1)[1] for p in trn if p.startswith(f"{JOBS_DIR}/trn1/"))
    assert jobs == ["mpi.sbatch", "node-check.sbatch"]


def test_without_shared_storage_the_ddp_job_asks_for_a_directory() -> None:
    plan = example_plan("g6e-inference-spot")
    spec = plan.spec.model_dump(mode="json")
    spec["storage"] = {"lustre": None, "home": None, "protect": False}
    from slurmstack.plan import build_plan

    bare = build_plan(type(plan.spec).model_validate(spec))
    ddp = next(t for p, t in head_jobs_files(bare).items() if p.endswith("/ddp.sbatch"))
    assert (
        '"${CHECKPOINT_DIR:?set CHECKPOINT_DIR to a directory every node of the job reaches}"'
        in ddp
    )


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_the_head_has_every_job_and_a_pool_only_its_steps(example: str) -> None:
    plan = example_plan(example)
    head = role_files(plan, "head")
    assert ACCEPT_PATH in head and ECR_LOGIN_PATH in head
    assert {p.name for p in plan.pools} == {
        load_document(Acceptance, head[ACCEPTANCE_PATH]).pools[i].pool
        for i in range(len(plan.pools))
    }
    for pool in plan.pools:
        files = role_files(plan, pool.name)
        jobs = {p for p in files if p.startswith(JOBS_DIR + "/")}
        assert jobs == {ACCEPTANCE_PATH, *library()}, pool.name
        own = load_document(Acceptance, files[ACCEPTANCE_PATH])
        assert [p.pool for p in own.pools] == [pool.name]
        assert own.pools[0] == load_document(Acceptance, head[ACCEPTANCE_PATH]).pool(pool.name)
        assert ACCEPT_PATH not in files and ECR_LOGIN_PATH in files


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_every_job_is_valid_shell(example: str, tmp_path: Path) -> None:
    for path, text in head_jobs_files(example_plan(example)).items():
        if path.endswith((".sbatch", ".sh")) or path in (ACCEPT_PATH, ECR_LOGIN_PATH):
            script = tmp_path / "script"
            script.write_text(text)
            shell = "bash" if text.startswith("#!/bin/bash") else "sh"
            done = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True)
            assert done.returncode == 0, (path, done.stderr)


def test_the_programs_compile(tmp_path: Path) -> None:
    files = library()
    source = tmp_path / "ddp_train.py"
    source.write_text(files[f"{JOBS_LIB_DIR}/ddp_train.py"])
    py_compile.compile(str(source), doraise=True)
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        message = "mpicc is missing (apt: libopenmpi-dev)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {message}")
        pytest.skip(message)
    c = tmp_path / "mpi_allreduce.c"
    c.write_text(files[f"{JOBS_LIB_DIR}/mpi_allreduce.c"])
    done = subprocess.run(
        [mpicc, "-Wall", "-Werror", "-fsyntax-only", str(c)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_bytecode_beside_the_job_programs_is_no_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip compiles every `.py` of the wheel, templates/jobs/lib/ddp_train.py included, so an
    installed package has a __pycache__ directory (and may have stray .pyc files) among the
    templates; the nodes get the same programs as from a clean checkout."""
    import compileall

    from slurmstack.render import templates

    clean = library()
    copy = tmp_path / "templates"
    shutil.copytree(templates.templates_dir(), copy)
    assert compileall.compile_dir(str(copy), quiet=1)
    assert (copy / "jobs" / "lib" / "__pycache__").is_dir()
    py_compile.compile(str(copy / "jobs/lib/ddp_train.py"), cfile=str(copy / "jobs/lib/old.pyc"))
    monkeypatch.setattr(templates, "PACKAGE_DIR", tmp_path)  # as installed: package/templates
    assert templates.templates_dir() == copy
    assert library() == clean
