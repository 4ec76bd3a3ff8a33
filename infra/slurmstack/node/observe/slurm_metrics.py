"""Slurm's state as metrics, read the agent's one way (scontrol's one-line records, sdiag).

Two kinds. slurmstack's own, whatever the Slurm version: each node's state and, when drained,
its reason's check and the repair table's remedy (nodes by state and reason), and each running
job's account, user, partition and GPUs (the join that prices a job's idle GPUs per account).
And Slurm's own names (slurm_nodes_idle, slurm_node_gpus_alloc, slurm_jobs_pending, ...), which
Slurm 25.11 and later serve from slurmctld itself (MetricsType=metrics/openmetrics): on an older
Slurm the agent writes the subset the dashboards and alert rules read, under the same names and
labels, so they read the same on either."""

from __future__ import annotations

import re
from collections import Counter

from ...contract import Metric, NodeConfig, parse_reason
from ..context import Context
from ..metrics_file import Sample
from ..slurm import SCONTROL, NodeRecord, parse_job_line

SLURM_SECONDS = 20
OPERATOR = "operator"  # a drain reason not in slurmstack's form: a person's
_GPUS = re.compile(r"(?:^|,)gres/gpu=(\d+)")
# A GRES list as scontrol prints it: gpu:l40s:4(S:0-1),gpu:2 (Gres, GresUsed, JOB_GRES).
_GRES_GPUS = re.compile(r"(?:^|,)gpu(?::[^:,()]+)?:(\d+)")


def gpus_in(tres: str) -> int:
    match = _GPUS.search(tres or "")
    return int(match.group(1)) if match else 0


def gpus_of(tres: str, gres: str) -> int:
    """GPUs from a TRES list, or from the GRES list where the TRES list has none: Slurm
    counts gres/gpu in CfgTRES and AllocTRES only when AccountingStorageTRES names it, which
    slurmctld refuses without slurmdbd ("slurmdbd is required to run with TRES gres/gpu")."""
    if _GPUS.search(tres or ""):
        return gpus_in(tres)
    return sum(int(m.group(1)) for m in _GRES_GPUS.finditer(gres or ""))


def pool_of(config: NodeConfig, name: str) -> str:
    return next((p.name for p in config.pools if name.startswith(p.node_name_prefix)), "")


def node_samples(config: NodeConfig, nodes: list[NodeRecord]) -> list[Sample]:
    """Each node's base state, and why it is drained (the check, or "operator")."""
    remedies = {r.cause: r.remedy.value for r in config.repair.rules} if config.repair else {}
    samples: list[Sample] = []
    for node in nodes:
        pool = pool_of(config, node.name)
        labels = {"node": node.name, "pool": pool}
        samples.append((Metric.NODE_STATE, {**labels, "state": node.base.lower()}, 1.0))
        fields = node.fields
        gpus = gpus_of(fields.get("CfgTRES", ""), fields.get("Gres", ""))
        samples.append((Metric.NODE_GPUS, labels, float(gpus)))
        if not node.out_of_service:
            continue
        parsed = next((p for p in map(parse_reason, node.reasons) if p is not None), None)
        check = parsed[0] if parsed else OPERATOR
        cause = f"{check}:{parsed[1].split()[0]}" if parsed and parsed[1] else check
        remedy = remedies.get(cause) or remedies.get(check, "leave")
        drained = {**labels, "check": check, "remedy": remedy if parsed else "leave"}
        samples.append((Metric.NODE_DRAINED, drained, 1.0))
    return samples


def job_records(ctx: Context) -> list[dict[str, str]]:
    # -d: each job's JOB_GRES (the GPUs it holds, also where no TRES counts them).
    result = ctx.bounded(SLURM_SECONDS, *SCONTROL, "--details", "--oneliner", "show", "job")
    if result.returncode != 0:
        return []
    return [parse_job_line(x) for x in result.stdout.splitlines() if x.startswith("JobId=")]


def job_gpus(job: dict[str, str]) -> int:
    return gpus_of(job.get("AllocTRES") or job.get("TRES", ""), job.get("JOB_GRES", ""))


def job_samples(jobs: list[dict[str, str]]) -> list[Sample]:
    samples: list[Sample] = []
    for job in jobs:
        if job.get("JobState") != "RUNNING":
            continue
        info = {
            "hpc_job": job.get("JobId", ""),
            "account": job.get("Account", ""),
            "user": job.get("UserId", "").split("(")[0],
            "partition": job.get("Partition", ""),
        }
        samples.append((Metric.JOB_INFO, info, 1.0))
        samples.append((Metric.JOB_GPUS, {"hpc_job": info["hpc_job"]}, float(job_gpus(job))))
    return samples


# --- Slurm's own names, for a Slurm without its metrics endpoint -----------------------------

STATE_COUNTS = {
    "slurm_nodes_idle": "IDLE",
    "slurm_nodes_alloc": "ALLOCATED",
    "slurm_nodes_mixed": "MIXED",
    "slurm_nodes_down": "DOWN",
}


def native_node_samples(nodes: list[NodeRecord]) -> list[Sample]:
    samples: list[Sample] = [("slurm_nodes", {}, float(len(nodes)))]
    bases = Counter(n.base for n in nodes)
    samples += [(name, {}, float(bases[base])) for name, base in STATE_COUNTS.items()]
    samples.append(("slurm_nodes_drain", {}, float(sum("DRAIN" in n.flags for n in nodes))))
    samples.append(("slurm_nodes_powered_down", {}, float(sum(n.powered_down for n in nodes))))
    for node in nodes:
        labels = {"node": node.name}
        fields = node.fields
        samples.append(("slurm_node_cpus", labels, float(fields.get("CPUTot", "0") or 0)))
        samples.append(("slurm_node_cpus_alloc", labels, float(fields.get("CPUAlloc", "0") or 0)))
        configured = gpus_of(fields.get("CfgTRES", ""), fields.get("Gres", ""))
        samples.append(("slurm_node_gpus", labels, float(configured)))
        allocated = float(gpus_of(fields.get("AllocTRES", ""), fields.get("GresUsed", "")))
        samples.append(("slurm_node_gpus_alloc", labels, allocated))
    return samples


def native_job_samples(jobs: list[dict[str, str]]) -> list[Sample]:
    states = Counter(j.get("JobState", "") for j in jobs)
    running = [j for j in jobs if j.get("JobState") == "RUNNING"]
    samples: list[Sample] = [
        ("slurm_jobs", {}, float(len(jobs))),
        ("slurm_jobs_running", {}, float(states["RUNNING"])),
        ("slurm_jobs_pending", {}, float(states["PENDING"])),
        ("slurm_jobs_gpus_alloc", {}, float(sum(job_gpus(j) for j in running))),
    ]
    partitions = sorted({j.get("Partition", "") for j in jobs} - {""})
    for partition in partitions:
        mine = [j for j in jobs if j.get("Partition") == partition]
        for state, name in (("RUNNING", "running"), ("PENDING", "pending")):
            count = sum(j.get("JobState") == state for j in mine)
            samples.append((f"slurm_partition_jobs_{name}", {"partition": partition}, float(count)))
    return samples


# sdiag's sections: the main scheduler's, then the backfill scheduler's.
_SDIAG = {
    "slurm_schedule_cycle_last": (r"Main schedule statistics.*?Last cycle:\s+(\d+)", 1.0),
    "slurm_schedule_cycle_cnt": (r"Main schedule statistics.*?Total cycles:\s+(\d+)", 1.0),
    "slurm_bf_cycle_cnt": (r"Backfilling stats.*?Total cycles:\s+(\d+)", 1.0),
}


def scheduler_samples(ctx: Context) -> list[Sample]:
    """The scheduler's cycles (slurm_schedule_cycle_last in microseconds, as sdiag and Slurm's
    own endpoint give it: its names, src/plugins/metrics/openmetrics/openmetrics.c, 26.05)."""
    result = ctx.bounded(SLURM_SECONDS, "sdiag")
    samples: list[Sample] = []
    for name, (pattern, scale) in _SDIAG.items():
        match = re.search(pattern, result.stdout or "", re.DOTALL)
        if result.returncode == 0 and match:
            samples.append((name, {}, int(match.group(1)) * scale))
    return samples
