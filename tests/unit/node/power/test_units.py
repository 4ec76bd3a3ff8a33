"""The pure parts of a resume: Slurm's hostlists read without scontrol, the resume file of each
Slurm version, and how one call's nodes become launch units and EC2 Fleet requests (an
exclusive multi-node job all or nothing, the rest best effort, at most 1,000 instances a
request)."""

from __future__ import annotations

import json

import pytest

from slurmstack.contract import ElasticPool
from slurmstack.node.power.hostlist import HostlistError, expand
from slurmstack.node.power.resume_file import ResumeJob, read_resume_file
from slurmstack.node.power.units import FLEET_REQUEST_MAX, LaunchUnit, launch_units, requests


@pytest.mark.parametrize(
    ("hostlist", "names"),
    [
        ("gpu-e1", ["gpu-e1"]),
        ("gpu-e[1-3,7]", ["gpu-e1", "gpu-e2", "gpu-e3", "gpu-e7"]),
        ("gpu-e[1-2],cpu-e[09-11]", ["gpu-e1", "gpu-e2", "cpu-e09", "cpu-e10", "cpu-e11"]),
        ("r[1-2]-n[1-2]", ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]),
        ("a,b", ["a", "b"]),
        ("", []),
    ],
)
def test_hostlists(hostlist: str, names: list[str]) -> None:
    assert expand(hostlist) == names


@pytest.mark.parametrize("bad", ["gpu-e[1-", "gpu-e]1[", "gpu-e[a-b]", "gpu-e[3-1]"])
def test_what_is_no_hostlist_goes_to_scontrol(bad: str) -> None:
    with pytest.raises(HostlistError):
        expand(bad)


def test_a_thousand_nodes_read_without_a_process() -> None:
    assert len(expand("gpu-e[1-1024]")) == 1024


# The jobs of one resume, as each Slurm version writes them (src/slurmctld/power_save.c).
SLURM_2205 = {"all_nodes": "gpu-e[1-4]", "jobs": [{"job_id": 7, "nodes": "gpu-e[1-4]"}]}
SLURM_2411 = {
    "all_nodes_resume": "gpu-e[1-6]",
    "jobs": [
        {"extra": None, "features": None, "job_id": 7, "nodes_alloc": "gpu-e[1-4]",
         "nodes_resume": "gpu-e[1-4]", "oversubscribe": "NO", "partition": "gpu",
         "reservation": None},
        {"job_id": 8, "nodes_alloc": "gpu-e[5-6]", "nodes_resume": "gpu-e[5-6]",
         "oversubscribe": "OK", "partition": "gpu"},
    ],
}  # fmt: skip
SLURM_2605 = {
    "all_nodes_resume": "gpu-e[1-6]",
    "jobs": [
        {"exclusive": "NODE", "job_id": 7, "nodes_alloc": "gpu-e[1-4]",
         "nodes_resume": "gpu-e[1-4]", "oversubscribe": "NO", "partition": "gpu", "priority": 1},
        {"exclusive": "NO", "job_id": 8, "nodes_alloc": "gpu-e[5-6]",
         "nodes_resume": "gpu-e[5-6]", "oversubscribe": "NO", "partition": "gpu", "priority": 1},
    ],
}  # fmt: skip


def test_the_resume_file_of_each_slurm_version() -> None:
    nodes = ("gpu-e1", "gpu-e2", "gpu-e3", "gpu-e4")
    assert read_resume_file(json.dumps(SLURM_2205)) == (ResumeJob(7, nodes, None),)
    assert read_resume_file(json.dumps(SLURM_2411)) == (
        ResumeJob(7, nodes, True),
        ResumeJob(8, ("gpu-e5", "gpu-e6"), False),
    )
    # 26.05: "exclusive" says it; its "oversubscribe" NO no longer means exclusive.
    assert read_resume_file(json.dumps(SLURM_2605))[1] == ResumeJob(8, ("gpu-e5", "gpu-e6"), False)
    assert read_resume_file(json.dumps(SLURM_2605))[0].exclusive is True


GPU = ElasticPool("gpu", "gpu-e[1-64]", 64, "c-pool-gpu", "p5.48xlarge", "on_demand",
                  exclusive=True)  # fmt: skip
CPU = ElasticPool("cpu", "cpu-e[1-8]", 8, "c-pool-cpu", "c7i.2xlarge", "spot")
POOLS = (GPU, CPU)


def names(hostlist: str) -> list[str]:
    return expand(hostlist)


def test_an_exclusive_multi_node_job_is_a_unit_of_its_own_the_rest_best_effort() -> None:
    jobs = [
        ResumeJob(7, tuple(names("gpu-e[1-4]")), True),
        ResumeJob(8, ("gpu-e5",), True),  # one node: nothing to hold together
        ResumeJob(9, tuple(names("gpu-e[6-7]")), False),  # shares its nodes: best effort
        ResumeJob(10, tuple(names("cpu-e[1-2]")), True),
    ]
    units, strangers = launch_units(names("gpu-e[1-8],cpu-e[1-3],x-1"), jobs, POOLS)
    assert strangers == ["x-1"]
    assert units == [
        LaunchUnit("gpu", tuple(names("gpu-e[1-4]")), 7),
        LaunchUnit("cpu", ("cpu-e1", "cpu-e2"), 10),
        LaunchUnit("gpu", tuple(names("gpu-e[5-8]"))),
        LaunchUnit("cpu", ("cpu-e3",)),
    ]


def test_where_the_file_does_not_say_the_partition_does() -> None:
    """Slurm 22.05's file has no exclusive flag: a job in an OverSubscribe=EXCLUSIVE pool is."""
    jobs = [ResumeJob(7, ("gpu-e1", "gpu-e2"), None), ResumeJob(8, ("cpu-e1", "cpu-e2"), None)]
    units, _ = launch_units(["gpu-e1", "gpu-e2", "cpu-e1", "cpu-e2"], jobs, POOLS)
    assert [u.job for u in units] == [7, None]


def test_a_job_whose_nodes_another_job_waits_for_launches_best_effort() -> None:
    jobs = [ResumeJob(7, ("gpu-e1", "gpu-e2"), True), ResumeJob(8, ("gpu-e2", "gpu-e3"), True)]
    units, _ = launch_units(["gpu-e1", "gpu-e2", "gpu-e3"], jobs, POOLS)
    assert units == [LaunchUnit("gpu", ("gpu-e1", "gpu-e2", "gpu-e3"))]


def test_requests_stay_within_ec2s_limit() -> None:
    big = LaunchUnit("gpu", tuple(f"gpu-e{i}" for i in range(1, 2501)), 7)
    sent = requests(big)
    assert [len(r.nodes) for r in sent] == [1000, 1000, 500] and FLEET_REQUEST_MAX == 1000
    assert [r.minimum for r in sent] == [1000, 1000, 500]  # all of each, or none
    best = requests(LaunchUnit("gpu", big.nodes))
    assert [r.minimum for r in best] == [1, 1, 1]
