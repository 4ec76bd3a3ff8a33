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
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from slurmstack.contract import (
    CLUSTER_TAG,
    ELASTIC_TAG,
    EVENTS_LOG_PATH,
    LAUNCH_TAG,
    POOL_ROLE,
    POWER_LOG_PATH,
    POWER_SERVICE,
    launch_key,
    read_launch_names,
    resource_name,
)
from vcluster.conftest import require_host
from vcluster.harness import VirtualCluster, wait_until
from vcluster.harness.elastic import ElasticNodes, prepare_head
from vcluster.harness.fleet_faults import insufficient_capacity
from vcluster.harness.standins import ORPHAN_GRACE_SECONDS

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
        prepare_head(cluster)
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


def test_the_heads_boot_dry_ran_a_launch_of_each_elastic_pool(
    elastic: tuple[VirtualCluster, ElasticNodes],
) -> None:
    """The head's cloud-init ran launch-check after slurmctld: one DryRun CreateFleet per
    elastic pool, the resume program's own request with its tags, which moto permitted
    (DryRunOperation); each is an ok event in the head's events log, and no node went DOWN."""
    cluster, _nodes = elastic
    dry = cluster.aws.faults.dry_runs
    template = "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName"
    assert sorted(r[template] for r in dry) == [
        resource_name("ve", POOL_ROLE, "cpu"),
        resource_name("ve", POOL_ROLE, "gpu"),
    ]
    for request in dry:
        tags = {
            value: request[key[: -len("Key")] + "Value"]
            for key, value in request.items()
            if key.startswith("TagSpecification") and key.endswith(".Key")
        }
        assert tags[CLUSTER_TAG] == "ve" and ELASTIC_TAG in tags, request
    events = [
        json.loads(line)
        for line in head(cluster).run("cat", EVENTS_LOG_PATH).stdout.split("\n")
        if line
    ]
    checks = {(e["subject"], e["ok"]) for e in events if e["event"] == "launch-check"}
    assert checks == {("gpu", True), ("cpu", True)}, events
    assert not [n for n, r in cluster.node_records().items() if "dry run" in r.get("Reason", "")]


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
        resource_name("ve", POOL_ROLE, "gpu")
    )
    assert request[config + "Overrides.1.Placement.GroupName"] == resource_name(
        "ve", POOL_ROLE, "gpu"
    )
    assert request[config + "Overrides.1.SubnetId"] == cluster.deployment.compute_subnet
    assert request["TargetCapacitySpecification.DefaultTargetCapacityType"] == "on-demand"
    # The instance carries the pool's tags, the elastic tag and its launch's id, whose object in
    # the bucket names its node; it booted from the launch template's user data, under that name.
    (instance_id,) = [i for i, n in nodes.nodes.items() if n.role == "gpu"]
    tags = nodes.instances()[instance_id]
    assert tags[ELASTIC_TAG] == "gpu" and tags[LAUNCH_TAG] == request["ClientToken"]
    names = (
        cluster.aws.client("s3")
        .get_object(Bucket=cluster.deployment.bucket, Key=launch_key(tags[LAUNCH_TAG]))["Body"]
        .read()
    )
    assert read_launch_names(names) == {instance_id: ran_on}
    node = nodes.nodes[instance_id]
    assert node.run("hostname").stdout.strip() == ran_on
    record = cluster.node_records()[ran_on]
    assert record["NodeAddr"] == node.address
    assert "CLOUD" in record["State"]


def powered_up_gpu_node(cluster: VirtualCluster, nodes: ElasticNodes) -> str:
    """The name of a GPU pool node that runs (one is started for a job if none does)."""
    for name, record in cluster.node_records().items():
        running = "POWERED_DOWN" not in record.get("State", "")
        if name.startswith("gpu-e") and running and nodes.named(name) is not None:
            return name
    job = sbatch(cluster, "-p", "gpu", "-N1", "--wrap", "true")
    wait_job(cluster, nodes, job, "COMPLETED", JOB_SECONDS)
    return job_field(cluster, job, "NodeList")


def test_an_idle_elastic_node_is_stopped_and_its_instance_terminated(
    elastic: tuple[VirtualCluster, ElasticNodes],
) -> None:
    """Idle past its pool's SuspendTime (scale_down_idle_minutes: 1), the node is powered down:
    slurmctld runs SuspendProgram, which terminates its instance; the always-on node of the
    other pool, in the same slurm.conf, stays up."""
    cluster, nodes = elastic
    name = powered_up_gpu_node(cluster, nodes)
    node = nodes.named(name)
    assert node is not None
    instance_id = node.instance_id
    always_on = [n for n in cluster.node_records() if n.startswith("cpu-") and "-e" not in n]

    def powered_down() -> dict[str, str] | None:
        nodes.sync()
        record = cluster.node_records().get(name, {})
        return record if "POWERED_DOWN" in record.get("State", "") else None

    record = wait_until(powered_down, f"{name} powered down", 60 + 90)
    assert record["State"] == "IDLE+CLOUD+POWERED_DOWN"
    ec2 = cluster.aws.client("ec2")
    found = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    assert found["State"]["Name"] == "terminated"
    assert not node.running()  # the harness let it die with its instance
    assert any("power-suspend" in text and name in text for _, text in power_log(cluster))
    # The always-on (dynamic) node was idle as long, and is not powered down.
    records = cluster.node_records()
    assert always_on and all(records[n]["State"] == "IDLE+DYNAMIC_NORM" for n in always_on)


def test_a_launch_refused_for_capacity_leaves_the_job_pending_then_retries(
    elastic: tuple[VirtualCluster, ElasticNodes],
) -> None:
    """EC2 has no g6e.12xlarge to give (stand-in "fleet-faults"): the node goes DOWN with EC2's
    error as its reason, the job is requeued and stays pending; once the pool's retry is due
    the sweep returns the node, and the next launch starts it and runs the job."""
    cluster, nodes = elastic
    before = len(cluster.aws.faults.fleet_requests)
    cluster.aws.faults.refuse_fleets(insufficient_capacity("g6e.12xlarge", "us-west-2a"))
    job = sbatch(cluster, "-p", "gpu", "-N1", "--exclusive", "--wrap", "hostname")

    def refused() -> dict[str, str] | None:
        for name, record in cluster.node_records().items():
            if name.startswith("gpu-e") and record.get("State", "").startswith("DOWN"):
                return record
        return None

    down = wait_until(refused, "a gpu node DOWN after the refused launch", RESUME_CALL_SECONDS)
    assert down["Reason"].startswith("slurmstack:launch: InsufficientInstanceCapacity: ")
    assert "g6e.12xlarge capacity" in down["Reason"]
    assert job_field(cluster, job, "JobState") == "PENDING"
    assert cluster.aws.faults.pending() == 0

    # The sweep, as its timer runs it: the node comes back once the pool's retry is due.
    def returned() -> bool:
        head(cluster).run("systemctl", "start", POWER_SERVICE)
        record = cluster.node_records().get(down["NodeName"], {})
        return not record.get("State", "").startswith("DOWN")

    wait_until(returned, f"{down['NodeName']} back in service", 60, poll=2)
    wait_job(cluster, nodes, job, "COMPLETED", JOB_SECONDS)
    requests = cluster.aws.faults.fleet_requests[before:]
    assert len(requests) >= 2  # the refused launch, then the one that ran the job
    assert any(
        "slurmstack:launch: InsufficientInstanceCapacity" in t for _, t in power_log(cluster)
    )


def test_an_elastic_spot_node_joins_the_always_on_node_in_one_partition(
    elastic: tuple[VirtualCluster, ElasticNodes],
) -> None:
    """The spot CPU pool has one always-on node (its group's, a dynamic node) and one elastic
    node (a CLOUD node) in one NodeSet: a two-node job takes both, the elastic one launched
    as Spot through the fleet."""
    cluster, nodes = elastic
    before = len(cluster.aws.faults.fleet_requests)
    job = sbatch(cluster, "-p", "cpu", "-N2", "--wrap", "srun hostname")
    wait_job(cluster, nodes, job, "COMPLETED", JOB_SECONDS)
    node_list = job_field(cluster, job, "NodeList")
    assert "cpu-e1" in node_list
    (request,) = cluster.aws.faults.fleet_requests[before:]
    assert request["TargetCapacitySpecification.DefaultTargetCapacityType"] == "spot"
    assert request["SpotOptions.AllocationStrategy"] == "price-capacity-optimized"
    assert "LaunchTemplateConfigs.1.Overrides.1.Placement.GroupName" not in request  # no EFA
    spot = nodes.named("cpu-e1")
    assert spot is not None
    found = cluster.aws.client("ec2").describe_instances(InstanceIds=[spot.instance_id])
    assert found["Reservations"][0]["Instances"][0].get("InstanceLifecycle") == "spot"


def test_the_sweep_terminates_an_instance_no_node_owns(
    elastic: tuple[VirtualCluster, ElasticNodes],
) -> None:
    """An elastic instance no node runs on (its address is no node's: a resume that died before
    it set the address, a node gone from the definition) is terminated by the sweep once its
    grace after launch has passed (stand-in "power-timeouts": 30 s), not before: a resume under
    way sets its nodes' addresses within seconds. The elastic nodes' own instances stay."""
    cluster, nodes = elastic
    ec2 = cluster.aws.client("ec2")
    stray = ec2.run_instances(
        ImageId="ami-0123456789abcdef0",
        InstanceType="c7i.2xlarge",
        MinCount=1,
        MaxCount=1,
        SubnetId=cluster.deployment.compute_subnet,
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [
                    {"Key": "slurmstack:cluster", "Value": "ve"},
                    {"Key": ELASTIC_TAG, "Value": "cpu"},
                ],
            }
        ],
    )["Instances"][0]
    launched = stray["LaunchTime"].timestamp()
    running = {i for i, info in nodes.instances().items() if info["State"] == "running"}
    owned = running - {stray["InstanceId"]}  # the stray carries the elastic tag too

    def states() -> dict[str, str]:
        return {
            i["InstanceId"]: i["State"]["Name"]
            for r in ec2.describe_instances()["Reservations"]
            for i in r["Instances"]
        }

    assert head(cluster).run("systemctl", "start", POWER_SERVICE).returncode == 0
    if time.time() - launched < ORPHAN_GRACE_SECONDS - 5:  # the sweep ran within its grace
        assert states()[stray["InstanceId"]] == "running"
    time.sleep(max(0.0, launched + ORPHAN_GRACE_SECONDS + 1 - time.time()))
    assert head(cluster).run("systemctl", "start", POWER_SERVICE).returncode == 0
    now = states()
    assert now[stray["InstanceId"]] == "terminated"
    # The nodes' own instances stay, but for one Slurm powered down meanwhile (idle past the
    # pool's short idle time: power-suspend terminates it, which is no sweep's doing).
    swept = [t for _, t in power_log(cluster) if "no elastic node runs at" in t]
    assert not [i for i in owned if any(i in line for line in swept)], swept
    suspended = "\n".join(t for _, t in power_log(cluster) if "power-suspend" in t)
    assert all(now[i] == "running" or i in suspended for i in owned), suspended
