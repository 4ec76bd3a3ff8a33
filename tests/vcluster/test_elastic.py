"""Elastic pools on the virtual cluster: Slurm's power saving starts and stops nodes that the
head's power programs launch and terminate through moto (definitions/elastic.yaml, a cluster of
its own: a GPU pool on EFA with no always-on node, a spot CPU pool with one always-on node and
one elastic node in the same partition).

What is real: slurmctld's power saving (22.05 here), the rendered ResumeProgram, SuspendProgram,
ResumeFailProgram and the sweep (the node agent's power-* subcommands, run by slurmctld as
SlurmUser, through the head's metadata firewall), their EC2 Fleet requests, the node's naming
from its tag and its CLOUD slurmd. Stand-ins: "elastic-instances" (moto's instances become
nodes), "fleet-faults", "power-env", "power-timeouts", "cloud-node-visibility",
"slurmd-boot-time" (harness/standins.py).
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from slurmstack.contract import (
    ELASTIC_TAG,
    NODE_NAME_TAG,
    POWER_LOG_PATH,
    pool_resource_name,
)
from vcluster.conftest import require_host
from vcluster.harness import VirtualCluster, wait_until
from vcluster.harness.elastic import ElasticNodes, write_power_env

pytestmark = [pytest.mark.vcluster, pytest.mark.elastic]

DEFINITION = Path(__file__).resolve().parent / "definitions" / "elastic.yaml"
# A job's wait from submission to the resume program's call, and an elastic node's from its
# launch to its job (boot here is seconds: no EC2, no image boot).
RESUME_CALL_SECONDS = 60
JOB_SECONDS = 120


@pytest.fixture(scope="module")
def elastic() -> Iterator[tuple[VirtualCluster, ElasticNodes]]:
    require_host()
    with VirtualCluster(DEFINITION, keep=os.environ.get("VCLUSTER_KEEP") == "1") as cluster:
        write_power_env(cluster)
        yield cluster, ElasticNodes(cluster)
        print(f"\nelastic virtual cluster timings (s): {cluster.timings}")
    assert cluster.leftovers() == [], "the elastic cluster's cleanup left these behind"


def head(cluster: VirtualCluster) -> Any:
    assert cluster.head is not None
    return cluster.head


def sbatch(cluster: VirtualCluster, *args: str) -> str:
    return str(head(cluster).run("sbatch", "--parsable", "--chdir=/tmp", *args).stdout.strip())


def job_field(cluster: VirtualCluster, job: str, key: str) -> str:
    out = head(cluster).run("scontrol", "-o", "show", "job", job, check=False).stdout
    fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
    return fields.get(key, "")


def power_log(cluster: VirtualCluster) -> list[tuple[float, str]]:
    """(seconds since the epoch, text) of each line the power programs logged."""
    out = head(cluster).run("cat", POWER_LOG_PATH, check=False).stdout
    lines = []
    for line in out.splitlines():
        stamp, _, text = line.partition(" ")
        when = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
        lines.append((when.replace(tzinfo=datetime.UTC).timestamp(), text))
    return lines


def wait_job(
    cluster: VirtualCluster, nodes: ElasticNodes, job: str, state: str, timeout: float
) -> None:
    """Until the job is in ``state``, booting the instances the power programs launch."""

    def done() -> bool:
        nodes.sync()
        return job_field(cluster, job, "JobState") == state

    try:
        wait_until(done, f"job {job} {state}", timeout)
    except TimeoutError as exc:
        raise AssertionError(
            f"{exc}\n{head(cluster).run('scontrol', 'show', 'job', job).stdout}\n"
            f"{head(cluster).run('cat', POWER_LOG_PATH, check=False).stdout}\n{cluster.logs()}"
        ) from None


def test_a_job_starts_an_elastic_node_from_the_pools_launch_template(
    elastic: tuple[VirtualCluster, ElasticNodes],
) -> None:
    cluster, nodes = elastic
    submitted = time.time()
    job = sbatch(cluster, "-p", "gpu", "-N1", "--wrap", "hostname")

    def resume_call() -> float | None:
        calls = [t for t, text in power_log(cluster) if "resume " in text and t >= submitted - 1]
        return calls[0] if calls else None

    called = wait_until(resume_call, "the resume program's call", RESUME_CALL_SECONDS)
    print(f"\nsubmission to ResumeProgram: {called - submitted:.1f} s")
    wait_job(cluster, nodes, job, "COMPLETED", JOB_SECONDS)
    ran_on = job_field(cluster, job, "NodeList")
    assert ran_on in ("gpu-e1", "gpu-e2")

    # One EC2 Fleet request: instant, from the pool's launch template, into the compute subnet
    # and the pool's placement group (g6e.12xlarge has EFA: the pool has one).
    (request,) = cluster.aws.faults.fleet_requests
    config = "LaunchTemplateConfigs.1."
    assert request["Type"] == "instant"
    assert request[config + "LaunchTemplateSpecification.LaunchTemplateName"] == (
        pool_resource_name("ve", "gpu")
    )
    assert request[config + "Overrides.1.Placement.GroupName"] == pool_resource_name("ve", "gpu")
    assert request[config + "Overrides.1.SubnetId"] == cluster.deployment.compute_subnet
    assert request["TargetCapacitySpecification.DefaultTargetCapacityType"] == "on-demand"
    # The instance carries the pool's tags, the elastic tag and its node's name; it booted
    # from the launch template's user data, under that name.
    (instance_id,) = [i for i, n in nodes.nodes.items() if n.role == "gpu"]
    tags = nodes.instances()[instance_id]
    assert tags[ELASTIC_TAG] == "gpu" and tags[NODE_NAME_TAG] == ran_on
    node = nodes.nodes[instance_id]
    assert node.run("hostname").stdout.strip() == ran_on
    record = cluster.node_records()[ran_on]
    assert record["NodeAddr"] == node.address
    assert "CLOUD" in record["State"]
