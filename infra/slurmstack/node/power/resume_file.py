"""SLURM_RESUME_FILE: what slurmctld tells ResumeProgram about the jobs it powers nodes up for,
as JSON, in a temporary file it names in that variable. Its keys changed with Slurm's versions
(src/slurmctld/power_save.c):

- 22.05: ``all_nodes``, and per job ``job_id`` and ``nodes`` (the nodes resumed for it);
- 23.02 to 25.11: ``all_nodes_resume``, and per job ``job_id``, ``nodes_resume``,
  ``nodes_alloc`` (all its nodes), ``oversubscribe`` (Slurm's job_share_string: NO for an
  exclusive job, USER, MCS or TOPO for one exclusive to a user, account or topology block, YES or
  OK for one that shares), ``partition``, ``features``, ``reservation``, ``extra``;
- 26.05: the same, plus ``exclusive`` (NO, NODE, USER, MCS, TOPO) and ``priority``, while
  ``oversubscribe`` becomes NO, YES or OK alone (NO no longer means exclusive).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .hostlist import expand

# 26.05's "exclusive" values of a job that has its nodes to itself (or to its user, account or
# topology block): job_exclusive_display_string. "NO" is a job that may share.
EXCLUSIVE_VALUES = frozenset({"NODE", "TOPO", "USER", "MCS"})
# 23.02-25.11's "oversubscribe" values of such a job: job_share_string.
NOT_SHARED_VALUES = frozenset({"NO", "USER", "MCS", "TOPO"})


@dataclass(frozen=True)
class ResumeJob:
    job_id: int
    nodes: tuple[str, ...]  # the nodes this call powers up for the job
    exclusive: bool | None  # None: the file does not say (Slurm 22.05)


def exclusive_of(job: dict[str, object]) -> bool | None:
    if "exclusive" in job:
        return str(job["exclusive"]).upper() in EXCLUSIVE_VALUES
    if "oversubscribe" in job:
        return str(job["oversubscribe"]).upper() in NOT_SHARED_VALUES
    return None


def read_resume_file(text: str) -> tuple[ResumeJob, ...]:
    """The jobs of a resume file (ValueError for one that is not JSON of this shape)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("a resume file is a JSON object")
    jobs = []
    for job in data.get("jobs") or ():
        nodes = job.get("nodes_resume", job.get("nodes")) or ""
        jobs.append(ResumeJob(int(job["job_id"]), tuple(expand(str(nodes))), exclusive_of(job)))
    return tuple(jobs)
