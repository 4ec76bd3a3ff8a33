"""The ready-to-run jobs (JOBS_DIR). On the head node, where users submit: per pool, the node
check, nccl-tests' all-reduce (GPU pools), a PyTorch DDP example that checkpoints and resumes,
and an MPI example, rendered per cluster (partitions, GPUs per node, fabric, mounts and
thresholds filled in); acceptance.json, what acceptance and the node check expect of each pool
(slurmstack.plan.workload); the users' commands slurmstack-accept and slurmstack-ecr-login. On
every node: the programs the jobs' steps run (lib/) and its own pool's acceptance.json. And the
ECR token's units, on every node."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.contract import (
    ACCEPT_PATH,
    ACCEPTANCE_PATH,
    ECR_LOGIN_PATH,
    ECR_TOKEN_REFRESH_HOURS,
    ECR_TOKEN_SERVICE,
    ECR_TOKEN_TIMER,
    JOBS_DIR,
    JOBS_LIB_DIR,
    Acceptance,
    Collective,
    Command,
    PoolAcceptance,
    unit_path,
)
from slurmstack.plan import ClusterPlan, PoolPlan
from slurmstack.plan.topology import block_pools, placed_pools
from slurmstack.plan.workload import acceptance, checkpoint_root, fabric_note
from slurmstack.render.templates import render_template, template_files

from ..contract import dump_document

JOB_TEMPLATES = "jobs"
# How long the examples wait for nodes under one leaf switch before taking what is free
# (sbatch --switches=1@<wait>): a few minutes of queue for a faster all-reduce every step.
SWITCH_WAIT = "05:00"


@dataclass(frozen=True)
class Job:
    name: str  # file name in the pool's directory
    template: str
    what: str  # one line, for the README


NODE_CHECK = Job(
    "node-check.sbatch", "node-check.sbatch.j2", "GPUs, topology, EFA, mounts, NCCL env"
)
NCCL = Job(
    "nccl-allreduce.sbatch", "nccl-allreduce.sbatch.j2", "nccl-tests all_reduce_perf, a verdict"
)
DDP = Job("ddp.sbatch", "ddp.sbatch.j2", "PyTorch DDP with torchrun; checkpoints, resumes")
MPI = Job("mpi.sbatch", "mpi.sbatch.j2", "an MPI all-reduce through PMIx")


def pool_jobs(accepted: PoolAcceptance) -> tuple[Job, ...]:
    """The jobs of a pool: the node check and MPI everywhere, the all-reduce on NVIDIA GPU
    pools, DDP where PyTorch runs on CUDA or CPU (not on Neuron, whose PyTorch is torch-neuronx)."""
    jobs = [NODE_CHECK]
    if accepted.collective is Collective.NCCL:
        jobs.append(NCCL)
    if accepted.collective is not Collective.NONE:
        jobs.append(DDP)
    jobs.append(MPI)
    return tuple(jobs)


def _nodes(job: Job, pool: PoolPlan) -> int:
    """Nodes a job asks for: every node for the checks, at least two for the all-reduce, two
    for the examples (one when the pool has one)."""
    count = max(pool.count, 1)
    if job is NODE_CHECK:
        return count
    if job is NCCL:
        return max(count, 2)
    return min(count, 2)


def render_job(plan: ClusterPlan, pool: PoolPlan, accepted: PoolAcceptance, job: Job) -> str:
    # enroot mounts the user's home (ENROOT_MOUNT_HOME in enroot.conf; pyxis follows it).
    home = plan.home
    shared = [m.path for m in plan.mounts if home is None or m.path != home.path]
    container_mounts = ",".join([f"{m}:{m}" for m in shared] + [f"{JOBS_DIR}:{JOBS_DIR}:ro"])
    return render_template(
        f"{JOB_TEMPLATES}/{job.template}",
        plan=plan,
        pool=pool,
        acceptance=accepted,
        path=f"{JOBS_DIR}/{pool.name}/{job.name}",
        nodes=_nodes(job, pool),
        gpus=pool.expected_gpus,
        nproc=max(pool.expected_gpus, 1),
        fabric=fabric_note(pool),
        checkpoint_root=checkpoint_root(plan),
        container_mounts=container_mounts,
        # The head places the pool's nodes in Slurm's topology: the jobs show --switches.
        placed=pool.name in placed_pools(plan),
        # An UltraServer pool: the jobs show its blocks partition and --segment.
        blocks=block_pools(plan).get(pool.name),
        switch_wait=SWITCH_WAIT,
    )


def verbatim_library() -> dict[str, str]:
    """The programs of lib/ that are no template: node path -> text, as they are."""
    sources = template_files(f"{JOB_TEMPLATES}/lib")
    return {f"{JOBS_LIB_DIR}/{s.name}": s.read_text() for s in sources if s.suffix != ".j2"}


def library() -> dict[str, str]:
    """lib/: the programs the jobs run, as files (templates rendered, the rest verbatim)."""
    out = verbatim_library()
    for source in template_files(f"{JOB_TEMPLATES}/lib"):
        if source.suffix != ".j2":
            continue
        name = source.name.removesuffix(".j2")
        out[f"{JOBS_LIB_DIR}/{name}"] = render_template(f"{JOB_TEMPLATES}/lib/{source.name}")
    return dict(sorted(out.items()))


def launchers() -> dict[str, str]:
    return {
        ACCEPT_PATH: render_template(
            f"{JOB_TEMPLATES}/launcher.sh.j2",
            what="the acceptance run of every pool (any user, on the head node; --help)",
            command=Command.ACCEPT.value,
        ),
        ECR_LOGIN_PATH: render_template(
            f"{JOB_TEMPLATES}/launcher.sh.j2",
            what="adds the account's ECR to your enroot credentials (container jobs)",
            command=Command.ECR_LOGIN.value,
        ),
    }


def head_jobs_files(plan: ClusterPlan) -> dict[str, str]:
    """Absolute node path -> text, on the head node, where users submit: every pool's jobs,
    their programs, acceptance.json of every pool, the README and the users' commands. Applied
    again with every configuration change (the head syncs), so they follow the pools."""
    accepted = acceptance(plan)
    files = {ACCEPTANCE_PATH: dump_document(accepted), **library(), **launchers()}
    readme_pools = []
    for pool in plan.pools:
        of_pool = accepted.pool(pool.name)
        jobs = pool_jobs(of_pool)
        for job in jobs:
            files[f"{JOBS_DIR}/{pool.name}/{job.name}"] = render_job(plan, pool, of_pool, job)
        readme_pools.append(
            {"name": pool.name, "instance_type": pool.instance_type, "partition": pool.partition,
             "jobs": jobs}
        )  # fmt: skip
    has_home = plan.home is not None
    files[f"{JOBS_DIR}/README"] = render_template(
        f"{JOB_TEMPLATES}/README.j2", plan=plan, pools=readme_pools, has_home=has_home
    )
    return dict(sorted(files.items()))


def pool_jobs_files(plan: ClusterPlan, pool: PoolPlan) -> dict[str, str]:
    """Absolute node path -> text, on a node of ``pool``: what the jobs' steps run there (the
    programs, the users' ECR command) and acceptance.json of this pool alone (the node check
    and the all-reduce verdict read it). A pool's nodes take their files at boot only: nothing
    here names another pool, so adding or changing one leaves these files as they are."""
    own = Acceptance(cluster=plan.name, pools=(acceptance(plan).pool(pool.name),))
    files = {ACCEPTANCE_PATH: dump_document(own), **library()}
    files[ECR_LOGIN_PATH] = launchers()[ECR_LOGIN_PATH]
    return dict(sorted(files.items()))


ECR_TOKEN_SERVICE_PATH = unit_path(ECR_TOKEN_SERVICE)
ECR_TOKEN_TIMER_PATH = unit_path(ECR_TOKEN_TIMER)


def ecr_token_units(plan: ClusterPlan, role: str) -> dict[str, str]:
    """The ECR token's service and timer, on every node (``role``: "head node" or "node of
    pool <name>", for their comments)."""
    return {
        ECR_TOKEN_SERVICE_PATH: render_template(
            "systemd/slurmstack-ecr-token.service.j2", plan=plan, role=role
        ),
        ECR_TOKEN_TIMER_PATH: render_template(
            "systemd/slurmstack-ecr-token.timer.j2",
            plan=plan,
            role=role,
            hours=ECR_TOKEN_REFRESH_HOURS,
        ),
    }
