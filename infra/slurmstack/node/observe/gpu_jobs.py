"""Which Slurm job holds each GPU, for dcgm-exporter's --hpc-job-mapping-dir: one file per GPU
index in GPU_JOB_DIR, a job id per line; the exporter labels that GPU's series hpc_job="<id>".
slurmd runs the prolog when a job is allocated the node (PrologFlags=Alloc, so a job that holds
GPUs and runs nothing on them is seen too) and the epilog when it ends, both as root with the
job's SLURM_JOB_ID and SLURM_JOB_GPUS (the GPU indices it holds)."""

from __future__ import annotations

import os

from ...contract import GPU_JOB_DIR
from ..context import Context, log, write_atomic


def job_gpus() -> tuple[str, list[str]]:
    job = os.environ.get("SLURM_JOB_ID", "")
    gpus = [g for g in os.environ.get("SLURM_JOB_GPUS", "").split(",") if g.strip().isdigit()]
    return job, [g.strip() for g in gpus]


def _jobs(ctx: Context, gpu: str) -> list[str]:
    path = ctx.path(f"{GPU_JOB_DIR}/{gpu}")
    return path.read_text().split() if path.exists() else []


def _write(ctx: Context, gpu: str, jobs: list[str]) -> None:
    text = "".join(f"{j}\n" for j in jobs)
    write_atomic(ctx.path(f"{GPU_JOB_DIR}/{gpu}"), text.encode(), 0o644)


def job_started(ctx: Context) -> int:
    job, gpus = job_gpus()
    for gpu in gpus if job else []:
        jobs = _jobs(ctx, gpu)
        if job not in jobs:
            _write(ctx, gpu, [*jobs, job])
    if job and gpus:
        log(f"job {job} holds GPUs {','.join(gpus)}")
    return 0  # never fail a job for its labels


def job_ended(ctx: Context) -> int:
    job, gpus = job_gpus()
    # Every GPU's file: a job's GPUs are gone from its environment when slurmd lost it.
    directory = ctx.path(GPU_JOB_DIR)
    names = [p.name for p in directory.iterdir()] if directory.is_dir() else []
    for gpu in sorted(set(names) | set(gpus)) if job else []:
        jobs = _jobs(ctx, gpu)
        if job in jobs:
            _write(ctx, gpu, [j for j in jobs if j != job])
    return 0
