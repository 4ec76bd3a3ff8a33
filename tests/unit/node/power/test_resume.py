"""ResumeProgram against moto's EC2 and S3: a job's nodes all or nothing (a partial fleet is
released, not kept), the rest best effort; one CreateFleet per request and no EC2 call per
instance; the names in one object per launch; one scontrol update per batch; the pools' retry
state changed under its lock by concurrent programs without losing a change."""

from __future__ import annotations

import json
import multiprocessing
import threading
from pathlib import Path
from typing import Any

import pytest

from slurmstack.contract import (
    CLUSTER_TAG,
    ELASTIC_TAG,
    LAUNCH_TAG,
    DeployParameter,
    ElasticPool,
    LaunchRetry,
    NodeConfig,
    dump_document,
    launch_key,
    read_launch_names,
)
from slurmstack.node.context import AgentError, Context
from slurmstack.node.power import hostlist, resume, units
from slurmstack.node.power.retry import RetryState
from support.node import PLAN, Answers, make_node

BUCKET = "c-bucket"
TAGS = {CLUSTER_TAG: PLAN.name}
GPU = ElasticPool("gpu", "gpu-e[1-64]", 64, "c-pool-gpu", "p5.48xlarge", "on_demand",
                  tags={**TAGS, ELASTIC_TAG: "gpu"}, exclusive=True)  # fmt: skip
CPU = ElasticPool("cpu", "cpu-e[1-8]", 8, "c-pool-cpu", "c7i.2xlarge", "on_demand",
                  tags={**TAGS, ELASTIC_TAG: "cpu"})  # fmt: skip


class Capacity:
    """EC2 in front of moto's with only ``available`` p5s to give (other types: no limit): an
    instant fleet gets what is left, none short of its MinTargetCapacity (unless
    ``honours_minimum`` is off, as EC2 would not be), with EC2's error for the rest. Counts
    the calls it is sent."""

    def __init__(self, client: Any, available: int, honours_minimum: bool = True) -> None:
        self.client, self.available, self.honours_minimum = client, available, honours_minimum
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self.client, name)

    def create_fleet(self, **request: Any) -> dict[str, Any]:
        self.calls.append("create_fleet")
        target = request["TargetCapacitySpecification"]["TotalTargetCapacity"]
        options = request.get("OnDemandOptions") or request.get("SpotOptions") or {}
        kind = request["LaunchTemplateConfigs"][0]["Overrides"][0]["InstanceType"]
        with self.lock:
            give = min(target, self.available) if kind == "p5.48xlarge" else target
            if self.honours_minimum and give < options.get("MinTargetCapacity", 1):
                give = 0
            if kind == "p5.48xlarge":
                self.available -= give
        errors = [] if give == target else [{
            "ErrorCode": "InsufficientInstanceCapacity",
            "ErrorMessage": "We currently do not have sufficient p5.48xlarge capacity",
        }]  # fmt: skip
        if give == 0:
            return {"FleetId": "fleet-none", "Instances": [], "Errors": errors}
        asked = json.loads(json.dumps(request))
        asked["TargetCapacitySpecification"]["TotalTargetCapacity"] = give
        for key in ("OnDemandOptions", "SpotOptions"):
            if key in asked:
                asked[key]["MinTargetCapacity"] = min(give, asked[key]["MinTargetCapacity"])
        return {**self.client.create_fleet(**asked), "Errors": errors}


def head(tmp_path: Path, aws: Any, resume_file: dict[str, Any] | None, monkeypatch) -> Context:
    ec2 = aws.client("ec2")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.42.0.0/18")["Subnet"]["SubnetId"]
    for pool in (GPU, CPU):
        ec2.create_launch_template(
            LaunchTemplateName=pool.launch_template,
            LaunchTemplateData={"ImageId": image, "InstanceType": "t3.micro"},
        )
    aws.client("s3").create_bucket(Bucket=BUCKET)
    ssm = aws.client("ssm")
    for key, value in {DeployParameter.COMPUTE_SUBNET_ID: subnet, DeployParameter.BUCKET: BUCKET}.items():  # fmt: skip
        ssm.put_parameter(Name=PLAN.parameter(key), Value=value, Type="String")
    node = make_node(tmp_path, aws, "head", run=Answers({}))
    config = NodeConfig(PLAN.name, "us-east-1", "head", PLAN.parameter_prefix, "s", (),
                        elastic_pools=(GPU, CPU), launch_retry=LaunchRetry(120, 1800))  # fmt: skip
    (tmp_path / "etc/slurmstack/node.json").write_text(dump_document(config))
    if resume_file is not None:
        path = tmp_path / "resume.json"
        path.write_text(json.dumps(resume_file))
        monkeypatch.setenv("SLURM_RESUME_FILE", str(path))
    else:
        monkeypatch.delenv("SLURM_RESUME_FILE", raising=False)
    return node


def with_capacity(node: Context, monkeypatch, available: int, **kwargs: Any) -> Capacity:
    ec2 = Capacity(node.aws.ec2(), available, **kwargs)
    monkeypatch.setattr(node.aws, "ec2", lambda: ec2)
    return ec2


def scontrol_updates(node: Context) -> list[list[str]]:
    return [c[4:] for c in node.run.calls if c[2:4] == ["scontrol", "update"]]  # type: ignore[attr-defined]


def live(aws: Any) -> dict[str, dict[str, str]]:
    out = {}
    for r in aws.client("ec2").describe_instances()["Reservations"]:
        for i in r["Instances"]:
            if i["State"]["Name"] not in ("terminated", "shutting-down"):
                out[i["InstanceId"]] = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
    return out


JOB_2411 = {
    "all_nodes_resume": "gpu-e[1-6],cpu-e[1-2]",
    "jobs": [
        {"job_id": 7, "nodes_resume": "gpu-e[1-4]", "oversubscribe": "NO"},
        {"job_id": 8, "nodes_resume": "gpu-e[5-6]", "oversubscribe": "OK"},
        {"job_id": 9, "nodes_resume": "cpu-e[1-2]", "oversubscribe": "OK"},
    ],
}


def test_jobs_launch_in_batches_named_in_one_object_each(aws, tmp_path, monkeypatch) -> None:
    node = head(tmp_path, aws, JOB_2411, monkeypatch)
    ec2 = with_capacity(node, monkeypatch, 100)
    result = resume.resume(node, "gpu-e[1-6],cpu-e[1-2]")
    assert sorted(result["launched"]) == sorted(hostlist.expand("gpu-e[1-6],cpu-e[1-2]"))
    assert result["down"] == {}
    # Three requests (job 7 all or nothing; the rest of gpu; cpu), one DescribeInstances: no
    # call per instance (the old program tagged each instance: 8 CreateTags here).
    assert ec2.calls.count("create_fleet") == 3
    assert [c for c in ec2.calls if c != "create_fleet"] == ["get_paginator"]
    instances = live(aws)
    assert len(instances) == 8
    launches = {tags[LAUNCH_TAG] for tags in instances.values()}
    assert len(launches) == 3
    named: dict[str, str] = {}
    for launch in launches:
        body = aws.client("s3").get_object(Bucket=BUCKET, Key=launch_key(launch))["Body"].read()
        named.update(read_launch_names(body))
    assert named == {i: n for n, i in result["launched"].items()}
    # One scontrol update per request sets its nodes' addresses, none per node.
    updates = scontrol_updates(node)
    assert len(updates) == 3 and all(u[1].startswith("nodeaddr=") for u in updates)
    assert sum(len(u[0].removeprefix("nodename=").split(",")) for u in updates) == 8


def test_a_job_ec2_cannot_launch_whole_gets_none_and_the_rest_runs(
    aws, tmp_path, monkeypatch
) -> None:
    """Capacity for 3 p5s: job 7 needs 4 at once and gets none (its request's minimum), the
    best-effort nodes get theirs; the job's nodes go DOWN with EC2's reason."""
    node = head(tmp_path, aws, JOB_2411, monkeypatch)
    with_capacity(node, monkeypatch, 3)
    result = resume.resume(node, "gpu-e[1-6],cpu-e[1-2]")
    down = result["down"]
    assert sorted(down) == ["gpu-e1", "gpu-e2", "gpu-e3", "gpu-e4"]
    assert all(
        r.startswith("slurmstack:launch: job 7 needs its 4 gpu nodes at once, EC2 launched 0: "
                     "InsufficientInstanceCapacity") for r in down.values()
    )  # fmt: skip
    assert sorted(result["launched"]) == ["cpu-e1", "cpu-e2", "gpu-e5", "gpu-e6"]
    assert len(live(aws)) == 4


@pytest.mark.parametrize("honours_minimum", [True, False])
def test_a_partial_fleet_is_released_not_kept(
    aws, tmp_path, monkeypatch, honours_minimum: bool
) -> None:
    """A job larger than one request (here: requests of 2) gets its first request and not its
    second; or EC2 answers one request short of its minimum. Either way the instances it got
    are terminated, and the job's nodes go DOWN, waiting for capacity for all of them."""
    monkeypatch.setattr(resume, "requests", lambda u: units.requests(u, limit=2))
    job = {"jobs": [{"job_id": 7, "nodes_resume": "gpu-e[1-3]", "exclusive": "NODE"}]}
    node = head(tmp_path, aws, job, monkeypatch)
    ec2 = with_capacity(node, monkeypatch, 2, honours_minimum=honours_minimum)
    result = resume.resume(node, "gpu-e[1-3]")
    assert result["launched"] == {}
    assert sorted(result["down"]) == ["gpu-e1", "gpu-e2", "gpu-e3"]
    assert live(aws) == {}  # released: nothing left running for a job that cannot start
    assert "terminate_instances" in ec2.calls
    assert "EC2 launched 2" in result["down"]["gpu-e1"]
    # DOWN (its job requeued) and powered down in one update each, for all three nodes.
    updates = scontrol_updates(node)
    assert updates[0][:2] == ["nodename=gpu-e1,gpu-e2,gpu-e3", "state=DOWN"]
    assert updates[1] == ["nodename=gpu-e1,gpu-e2,gpu-e3", "state=POWER_DOWN_FORCE"]
    # The pool waits before it launches again.
    assert not RetryState.load(node).due("gpu", node.clock())


def test_without_a_resume_file_every_node_launches_best_effort(aws, tmp_path, monkeypatch) -> None:
    node = head(tmp_path, aws, None, monkeypatch)
    with_capacity(node, monkeypatch, 2)
    result = resume.resume(node, "gpu-e[1-3]")
    assert sorted(result["launched"]) == ["gpu-e1", "gpu-e2"]
    assert list(result["down"]) == ["gpu-e3"]


def fail_pool(args: tuple[str, str, int]) -> None:
    root, pool, n = args
    ctx = Context(root=Path(root))
    for i in range(n):
        with RetryState.changing(ctx) as state:
            state.failed(f"{pool}-{i}", "x", 0.0, LaunchRetry())


def test_concurrent_programs_lose_no_change_to_the_retry_state(tmp_path: Path) -> None:
    """Several programs at once (slurmctld runs a resume while another launches), each
    recording failures of its own pools: with the lock every one is kept."""
    (tmp_path / "var/spool/slurmctld").mkdir(parents=True)
    with multiprocessing.get_context("fork").Pool(4) as workers:
        workers.map(fail_pool, [(str(tmp_path), f"p{w}", 25) for w in range(4)])
    state = RetryState.load(Context(root=tmp_path))
    assert len(state.pools) == 100


class BusySlurmctld:
    """scontrol's update fails as it does when slurmctld answers too late, ``times`` times
    (every time: None); everything else as ``run`` answers."""

    def __init__(self, run: Any, times: int | None) -> None:
        self.run, self.times, self.failed = run, times, 0
        self.calls = run.calls

    def __call__(self, cmd: list[str], check: bool = True):
        import subprocess

        if cmd[2:4] == ["scontrol", "update"] and (self.times is None or self.failed < self.times):
            self.failed += 1
            self.calls.append(cmd)
            error = "slurm_update error: Socket timed out on send/recv operation"
            return subprocess.CompletedProcess(cmd, 1, "", error)
        return self.run(cmd, check)


def test_a_busy_slurmctld_is_asked_again(aws, tmp_path, monkeypatch) -> None:
    node = head(tmp_path, aws, None, monkeypatch)
    node.run = BusySlurmctld(node.run, times=2)
    result = resume.resume(node, "cpu-e[1-2]")
    assert sorted(result["launched"]) == ["cpu-e1", "cpu-e2"]
    assert len(scontrol_updates(node)) == 3  # two timed out, the third took
    assert len(live(aws)) == 2


def test_instances_whose_addresses_slurm_never_takes_are_released(
    aws, tmp_path, monkeypatch
) -> None:
    """slurmctld never answers: the instances are terminated rather than left running with no
    node (the program then fails on the DOWN update, and slurmctld's ResumeTimeout follows)."""
    node = head(tmp_path, aws, None, monkeypatch)
    node.run = BusySlurmctld(node.run, times=None)
    with pytest.raises(AgentError, match="Socket timed out"):
        resume.resume(node, "cpu-e[1-2]")
    assert live(aws) == {}
