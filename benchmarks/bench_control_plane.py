"""The control plane at scale, measured in one run (issue 24's Proof).

Drives the real power programs (ResumeProgram, the sweep) and the real controller pass of the
node agent against moto behind a counting, throttling proxy (control_plane/throttling_proxy.py:
a chosen fraction of every AWS call answered with the service's real throttling error; EC2
Fleet given finite capacity in one pool), with a real slurmctld holding the nodes
(control_plane/slurm_cloud.py):

1. resume: ``--nodes`` CLOUD nodes in ``--pools`` exclusive partitions; per pool two exclusive
   jobs of a quarter of its nodes each (all or nothing) and an array of one-node jobs for the
   rest (best effort) are submitted; slurmctld powers their nodes up and calls ResumeProgram,
   whose calls (hostlist and SLURM_RESUME_FILE, as slurmctld wrote them) the agent's resume
   program then runs. The first pool's EC2 capacity is ``--capacity`` of its nodes. Then every
   node must be launched (its address in Slurm is its instance's, which the launch's names
   object gives it) or DOWN with EC2's reason; no instance may be left that no node holds
   (orphan), no node neither launched nor DOWN (lost).
2. sweep: one pass over the same state (it must find nothing to terminate).
3. controller: one pass over ``--controller-nodes`` always-on nodes in ``--controller-pools``
   Auto Scaling groups (the same slurmctld holds them at their instances' addresses).

    uv run --frozen python benchmarks/bench_control_plane.py [--nodes 1024] [--pools 4]
        [--throttle 0.2] [--controller-nodes 2048] [--controller-pools 100] [--json]

Needs root and Slurm (slurmctld, munged, sbatch), as the `slurm` tests do. Exits 1 when a goal
is missed (goals: --help's epilog). Times are wall-clock on this machine, with the proxy's
throttled calls retried and backed off for real by the clients (botocore's standard mode).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "control_plane"))

from slurm_cloud import CloudSlurm, ElasticPartition, ResumeCall  # noqa: E402
from throttling_proxy import Proxy, index_moto_tags  # noqa: E402

from slurmstack.contract import (  # noqa: E402
    CLUSTER_TAG,
    ELASTIC_TAG,
    LAUNCH_TAG,
    POOL_TAG,
    BootstrapEnv,
    Check,
    DeployParameter,
    ElasticPool,
    LaunchRetry,
    NodeConfig,
    PoolRef,
    bootstrap_env_text,
    dump_document,
    elastic_node_names,
    launch_key,
    node_name,
    parameter_name,
    parse_reason,
    read_launch_names,
)

REGION = "us-east-1"
CLUSTER = "bench"
PREFIX = "/slurmstack/bench"
BUCKET = "bench-bucket"
MUTATING_PER_NODE_GOAL = 1.1
CONTROLLER_SECONDS_GOAL = 10.0
# EC2's error, as a launch reason carries it: its code, then ": " and its message.
EC2_ERROR = re.compile(r"\b[A-Z][A-Za-z]+(\.[A-Za-z]+)*: ")


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=f"Goals: every node launched or DOWN with EC2's reason, no orphan, none lost, "
        f"at most {MUTATING_PER_NODE_GOAL} mutating EC2 calls per node, a controller pass "
        f"under {CONTROLLER_SECONDS_GOAL:g} s of its own (its CPU time less moto's, plus its wait "
        f"for Slurm's commands).",
    )
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--pools", type=int, default=4)
    parser.add_argument("--throttle", type=float, default=0.2, help="fraction of calls throttled")
    parser.add_argument("--capacity", type=float, default=0.75,
                        help="the first pool's EC2 capacity, as a fraction of its nodes")  # fmt: skip
    parser.add_argument("--controller-nodes", type=int, default=2048)
    parser.add_argument("--controller-pools", type=int, default=100)
    parser.add_argument("--wait", type=float, default=300.0,
                        help="seconds to wait for slurmctld's ResumeProgram calls")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--profile", type=Path, metavar="FILE",
                        help="write cProfile's statistics of the controller's pass to FILE")  # fmt: skip
    args = parser.parse_args(argv)
    if args.nodes < 8 * args.pools:
        parser.error("--nodes must be at least 8 per pool")
    return args


# --- AWS (moto): what the stack would have made -------------------------------------------


World = tuple[list[ElasticPool], list[PoolRef], dict[str, str]]


def make_aws(setup: Any, args: argparse.Namespace) -> World:
    """Subnet, bucket, parameters, a launch template per elastic pool, and the always-on pools'
    groups with their instances. Returns (elastic pools, always-on pools, node -> address)."""
    ec2, asg = setup.client("ec2"), setup.client("autoscaling")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.42.0.0/16")["Subnet"]["SubnetId"]
    setup.client("s3").create_bucket(Bucket=BUCKET)
    ssm = setup.client("ssm")
    for key, value in {DeployParameter.COMPUTE_SUBNET_ID: subnet, DeployParameter.BUCKET: BUCKET}.items():  # fmt: skip
        ssm.put_parameter(Name=parameter_name(PREFIX, key), Value=value, Type="String")
    data = {"ImageId": image, "InstanceType": "t3.micro"}
    per_pool = args.nodes // args.pools
    elastic = []
    for i in range(args.pools):
        name = f"p{i}"
        template = f"{CLUSTER}-pool-{name}"
        ec2.create_launch_template(LaunchTemplateName=template, LaunchTemplateData=data)
        tags = {CLUSTER_TAG: CLUSTER, POOL_TAG: name, ELASTIC_TAG: name}
        elastic.append(ElasticPool(name, elastic_node_names(name, per_pool), per_pool, template,
                                   "p5.48xlarge", "on_demand", tags=tags, exclusive=True))  # fmt: skip
    ec2.create_launch_template(LaunchTemplateName=f"{CLUSTER}-always", LaunchTemplateData=data)
    refs, addresses = [], {}
    for i in range(args.controller_pools):
        name = f"q{i:03d}"
        group = f"{CLUSTER}-pool-{name}"
        size = args.controller_nodes // args.controller_pools + (
            1 if i < args.controller_nodes % args.controller_pools else 0
        )
        asg.create_auto_scaling_group(
            AutoScalingGroupName=group,
            LaunchTemplate={"LaunchTemplateName": f"{CLUSTER}-always"},
            MinSize=size, MaxSize=size, DesiredCapacity=size, VPCZoneIdentifier=subnet,
            Tags=[{"Key": k, "Value": v, "PropagateAtLaunch": True, "ResourceId": group,
                   "ResourceType": "auto-scaling-group"}
                  for k, v in {CLUSTER_TAG: CLUSTER, POOL_TAG: name}.items()],
        )  # fmt: skip
        refs.append(PoolRef(name, f"{name}-", name, group=group))
        ids = [m["InstanceId"] for g in asg.describe_auto_scaling_groups(
            AutoScalingGroupNames=[group])["AutoScalingGroups"] for m in g["Instances"]]  # fmt: skip
        for page in ec2.get_paginator("describe_instances").paginate(InstanceIds=ids):
            for reservation in page["Reservations"]:
                for item in reservation["Instances"]:
                    address = item["PrivateIpAddress"]
                    addresses[node_name(f"{name}-", address)] = address
    return elastic, refs, addresses


class TimedRun:
    """The agent's command runner, timing what it waits for Slurm's commands (wall-clock)."""

    def __init__(self, run: Any) -> None:
        self.run, self.seconds = run, 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return self.run(*args, **kwargs)
        finally:
            self.seconds += time.monotonic() - started


def head_context(root: Path, session: Any, run: TimedRun, elastic: list[ElasticPool],
                 refs: list[PoolRef]) -> Any:  # fmt: skip
    from slurmstack.node.context import Context
    from support.examples import example_plan  # the repair policy of a rendered example

    env = BootstrapEnv(CLUSTER, REGION, "head", PREFIX, "munge",
                       parameter_name(PREFIX, DeployParameter.CONFIG_MANIFEST),
                       parameter_name(PREFIX, DeployParameter.BUCKET))  # fmt: skip
    (root / "etc/slurmstack").mkdir(parents=True)
    (root / "var/spool/slurmctld").mkdir(parents=True)
    (root / "etc/slurmstack/bootstrap.env").write_text(bootstrap_env_text(env))
    config = NodeConfig(
        CLUSTER, REGION, "head", PREFIX, "munge", (),
        elastic_pools=tuple(elastic), launch_retry=LaunchRetry(120, 1800), pools=tuple(refs),
        repair=example_plan("p5-training").health.repair,
    )  # fmt: skip
    (root / "etc/slurmstack/node.json").write_text(dump_document(config))
    return Context(root=root, session=session, run=run,
                   owner=lambda _name: (os.getuid(), os.getgid()))  # fmt: skip


# --- the phases -----------------------------------------------------------------------------


def submit_jobs(slurm: CloudSlurm, elastic: list[ElasticPool]) -> None:
    for pool in elastic:
        big = max(2, pool.nodes // 4)
        slurm.submit(pool.name, big)
        slurm.submit(pool.name, big)
        slurm.submit(pool.name, 1, array=pool.nodes - 2 * big)


def run_resumes(ctx: Any, calls: list[ResumeCall]) -> None:
    from slurmstack.node.power import resume

    for call in calls:
        if call.resume_file is None:
            os.environ.pop(resume.RESUME_FILE_VARIABLE, None)
        else:
            os.environ[resume.RESUME_FILE_VARIABLE] = str(call.resume_file)
        resume.resume(ctx, call.hostlist)


def outcome(ctx: Any, setup: Any, asked: set[str]) -> dict[str, Any]:
    """Every asked node launched (its address is that of the instance its launch names it on),
    DOWN with EC2's reason, or lost; and the live elastic instances no node holds."""
    from slurmstack.node.slurm import slurm_nodes

    records = {r.name: r for r in slurm_nodes(ctx)}
    live: dict[str, tuple[str, str]] = {}  # instance -> (address, launch)
    pages = setup.client("ec2").get_paginator("describe_instances").paginate(
        Filters=[{"Name": "tag-key", "Values": [ELASTIC_TAG]},
                 {"Name": "instance-state-name", "Values": ["pending", "running"]}])  # fmt: skip
    for page in pages:
        for reservation in page["Reservations"]:
            for item in reservation["Instances"]:
                tags = {t["Key"]: t["Value"] for t in item.get("Tags", [])}
                live[item["InstanceId"]] = (item["PrivateIpAddress"], tags.get(LAUNCH_TAG, ""))
    named: dict[str, str] = {}
    s3 = setup.client("s3")
    for launch in {launch for _, launch in live.values()}:
        with contextlib.suppress(Exception):  # no object: its instances are orphans
            body = s3.get_object(Bucket=BUCKET, Key=launch_key(launch))["Body"].read()
            named.update(read_launch_names(body))
    node_at = {address: named.get(i) for i, (address, _) in live.items()}
    address_of = {i: address for i, (address, _) in live.items()}
    launched, down, lost = set(), set(), set()
    for name in asked:
        record = records.get(name)
        parsed = parse_reason(record.reason) if record else None
        if record and record.address in node_at and node_at[record.address] == name:
            launched.add(name)
        elif (
            record
            and record.base == "DOWN"
            and parsed
            and parsed[0] == Check.LAUNCH
            and (EC2_ERROR.search(parsed[1]))
        ):
            down.add(name)
        else:
            lost.add(name)
    held = {records[n].address for n in launched}
    orphans = [i for i, (address, _) in live.items() if address not in held]
    # Why each orphan is one: the node its launch named holds another instance (launched
    # twice), is DOWN, is at no instance's address, or its launch named it not at all.
    kinds: Counter[str] = Counter()
    for instance in orphans:
        name = named.get(instance)
        record = records.get(name or "")
        if name is None:
            kinds["unnamed"] += 1
        elif name in launched:
            kinds["its node holds another instance"] += 1
        elif record is not None and record.base == "DOWN":
            kinds["its node is DOWN"] += 1
        elif record is not None and record.address == address_of[instance]:
            kinds["its node at its address, not launched"] += 1
        else:
            kinds["its node at another address"] += 1
    return {"launched": len(launched), "down_with_reason": len(down), "lost": sorted(lost),
            "orphans": orphans, "orphan_kinds": dict(kinds)}  # fmt: skip


def progress(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.__stderr__, flush=True)


def bench(args: argparse.Namespace, log: io.TextIOBase) -> dict[str, Any]:
    import boto3
    from moto import mock_aws
    from moto.core.models import botocore_stubber

    from slurmstack.node.controller.loop import control
    from slurmstack.node.power import sweep
    from slurmstack.node.power.hostlist import expand

    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                      AWS_DEFAULT_REGION=REGION)  # fmt: skip
    result: dict[str, Any] = {"nodes": args.nodes, "pools": args.pools,
                              "throttled_fraction": args.throttle}  # fmt: skip
    index_moto_tags()
    slurm = CloudSlurm()
    with mock_aws(), tempfile.TemporaryDirectory() as tmp:
        setup = boto3.Session(region_name=REGION)  # the benchmark's own view: not proxied
        agent = boto3.Session(region_name=REGION)
        proxy = Proxy(agent, botocore_stubber, args.throttle)
        started = time.monotonic()
        elastic, refs, addresses = make_aws(setup, args)
        # moto's state (thousands of instances, each a graph of objects) would be traversed by
        # every full garbage collection the agent's work triggers, which a head node's agent
        # does not carry: kept out of the collector from here.
        gc.freeze()
        first = elastic[0]
        proxy.capacity[first.launch_template] = int(first.nodes * args.capacity)
        result["setup_seconds"] = round(time.monotonic() - started, 1)
        progress(f"moto: {len(elastic)} launch templates, {len(refs)} groups, "
                 f"{len(addresses)} instances in {result['setup_seconds']} s")  # fmt: skip
        try:
            slurm.start([ElasticPartition(p.name, p.node_names) for p in elastic], addresses)
            timed = TimedRun(slurm.run)
            ctx = head_context(Path(tmp), agent, timed, elastic, refs)
            started = time.monotonic()
            submit_jobs(slurm, elastic)
            calls = slurm.resume_calls(args.nodes, args.wait)
            result["slurmctld_resume_seconds"] = round(time.monotonic() - started, 1)
            progress(f"slurmctld: {len(calls)} ResumeProgram calls in "
                     f"{result['slurmctld_resume_seconds']} s")  # fmt: skip
            asked_list = [n for call in calls for n in expand(call.hostlist)]
            asked = set(asked_list)
            result["asked_more_than_once"] = len(asked_list) - len(asked)
            result["resume_calls"] = len(calls)
            with contextlib.redirect_stderr(log):
                proxy.reset()
                started = time.monotonic()
                run_resumes(ctx, calls)
                result["resume_seconds"] = round(time.monotonic() - started, 2)
                counts = proxy.counts()
                result["resume_moto_seconds"] = counts["standin_seconds"]
                result["resume_moto_errors"] = counts["standin_errors"]
                result.update({k: counts[k] for k in ("ec2_calls", "ssm_calls", "s3_calls",
                                                      "throttled_calls")})  # fmt: skip
                result["mutating_ec2_calls"] = counts["mutating_ec2_calls"]
                result["mutating_ec2_calls_per_node"] = round(
                    counts["mutating_ec2_calls"] / args.nodes, 4
                )
                result["resume_calls_by_operation"] = counts["by_operation"]
                result.update(outcome(ctx, setup, asked))
                result["asked"] = len(asked)
                progress(f"resume: {result['resume_seconds']} s")

                proxy.reset()
                started = time.monotonic()
                swept = sweep.sweep(ctx)
                result["sweep_seconds"] = round(time.monotonic() - started, 2)
                result["sweep_terminated"] = len(swept["terminated"])
                result["sweep_ec2_calls"] = proxy.counts()["ec2_calls"]
                progress(f"sweep: {result['sweep_seconds']} s")

                proxy.reset()
                profiler = cProfile.Profile() if args.profile else None
                timed.seconds = 0.0
                started, cpu = time.monotonic(), time.thread_time()
                with profiler or contextlib.nullcontext():
                    done = control(ctx)
                result["controller_cycle_seconds"] = round(time.monotonic() - started, 2)
                cpu = time.thread_time() - cpu
                if profiler:
                    profiler.dump_stats(args.profile)
                counts = proxy.counts()
                result["controller_moto_seconds"] = counts["standin_seconds"]
                result["controller_cycle_seconds_without_moto"] = round(
                    result["controller_cycle_seconds"] - counts["standin_seconds"], 2
                )
                # What the pass itself costs, whatever else this shared machine runs: its CPU
                # time less moto's (moto answers in the agent's thread), plus its wait for
                # Slurm's commands (wall-clock: itself longer under load).
                result["controller_cpu_seconds"] = round(cpu, 2)
                result["controller_moto_cpu_seconds"] = counts["standin_cpu_seconds"]
                result["controller_slurm_seconds"] = round(timed.seconds, 2)
                result["controller_own_seconds"] = round(
                    cpu - counts["standin_cpu_seconds"] + timed.seconds, 2
                )
            result["controller_nodes"] = len(addresses)
            result["controller_pools"] = len(refs)
            result["controller_aws"] = done.get("aws")
            result["controller_actions"] = len(done.get("actions") or ())
            result["controller_calls"] = counts["ec2_calls"] + counts["autoscaling_calls"]
            result["controller_throttled_calls"] = counts["throttled_calls"]
        finally:
            slurm.stop()
    return result


def goals(result: dict[str, Any]) -> list[str]:
    missed = []
    if result["asked"] != result["nodes"]:
        missed.append(f"slurmctld asked {result['asked']} of {result['nodes']} nodes")
    if result["launched"] + result["down_with_reason"] != result["asked"] or result["lost"]:
        missed.append(f"lost: {result['lost'][:10]}")
    if result["orphans"]:
        missed.append(f"orphans: {result['orphans'][:10]} {result['orphan_kinds']}")
    if result["resume_moto_errors"]:  # a failure of the stand-in, not an answer of AWS
        missed.append(f"moto failed {result['resume_moto_errors']} requests")
    if result["mutating_ec2_calls_per_node"] > MUTATING_PER_NODE_GOAL:
        missed.append(f"{result['mutating_ec2_calls_per_node']} mutating EC2 calls per node")
    if not result["controller_aws"]:
        missed.append("the controller's pass did not read AWS")
    # The goal is the controller's: moto's answers (its serializer takes seconds per thousand
    # instances, where AWS takes well under one) are counted apart, and so is the load of
    # whatever else shares this machine (the pass's own CPU time, plus its wait for Slurm).
    if result["controller_own_seconds"] >= CONTROLLER_SECONDS_GOAL:
        missed.append(f"controller pass {result['controller_own_seconds']} s of its own")
    if result["sweep_terminated"]:
        missed.append(f"the sweep terminated {result['sweep_terminated']} instances")
    return missed


def table(result: dict[str, Any]) -> str:
    rows = [
        ("nodes / pools / throttled", f"{result['nodes']} / {result['pools']} / "
                                      f"{result['throttled_fraction']:.0%}"),
        ("ResumeProgram calls (slurmctld's)", result["resume_calls"]),
        ("launched", result["launched"]),
        ("DOWN with EC2's reason", result["down_with_reason"]),
        ("lost / orphan instances", f"{len(result['lost'])} / {len(result['orphans'])} "
                                     f"{result['orphan_kinds'] or ''}"),
        ("EC2 calls (attempts) / throttled (all)", f"{result['ec2_calls']} / "
                                                   f"{result['throttled_calls']}"),
        ("mutating EC2 calls / per node", f"{result['mutating_ec2_calls']} / "
                                          f"{result['mutating_ec2_calls_per_node']}"),
        ("SSM / S3 calls", f"{result['ssm_calls']} / {result['s3_calls']}"),
        ("resume seconds (of which in moto)", f"{result['resume_seconds']} "
                                              f"({result['resume_moto_seconds']})"),
        ("sweep seconds / EC2 calls / terminated", f"{result['sweep_seconds']} / "
         f"{result['sweep_ec2_calls']} / {result['sweep_terminated']}"),
        ("controller nodes / pools", f"{result['controller_nodes']} / "
                                     f"{result['controller_pools']}"),
        ("controller pass seconds (of which in moto)", f"{result['controller_cycle_seconds']} "
                                                       f"({result['controller_moto_seconds']})"),
        ("controller pass CPU s (moto's) + Slurm wait s", f"{result['controller_cpu_seconds']} "
         f"({result['controller_moto_cpu_seconds']}) + {result['controller_slurm_seconds']}"),
        ("controller pass, its own seconds", result["controller_own_seconds"]),
        ("controller pass AWS calls / actions", f"{result['controller_calls']} / "
                                                f"{result['controller_actions']}"),
    ]  # fmt: skip
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    with tempfile.TemporaryFile("w+") as log:
        try:
            result = bench(args, log)  # type: ignore[arg-type]
        except Exception:
            log.seek(0)
            sys.stderr.write(log.read()[-5000:])
            raise
    missed = goals(result)
    result["goals_missed"] = missed
    print(json.dumps(result, sort_keys=True) if args.json else table(result))
    for line in missed:
        print(f"goal missed: {line}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
