"""ResumeProgram: launch instances for the elastic nodes slurmctld powers up, by job and in
batches; name them; tell slurmctld their addresses. Nodes that get none go DOWN with EC2's error.

One call: the nodes (the hostlist slurmctld passes) and their jobs (SLURM_RESUME_FILE) become
launch units (power.units: an exclusive multi-node job's nodes all or nothing, the rest best
effort, per pool), sent as EC2 Fleet requests of at most FLEET_REQUEST_MAX instances, several at
once. Each request's instances are named in one object of the bucket (launch_key: the node reads
its name there at boot), their addresses read for all requests together (DescribeInstances, a
page per thousand), and set in Slurm in one scontrol update per request. The nodes left without
an instance go DOWN in one update per reason, and the pools' retry state changes under its lock.
EC2 calls: one CreateFleet per request, DescribeInstances by the thousand, TerminateInstances
only for what is released; none per instance.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ...contract import (
    CLUSTER_TAG,
    Check,
    DeployParameter,
    ElasticPool,
    launch_key,
    launch_names_text,
    reason,
)
from ..context import AgentError, Context, log
from ..ec2 import described_instances
from . import launch, nodes
from .resume_file import ResumeJob, read_resume_file
from .retry import RetryState
from .units import Request, launch_units, requests

if TYPE_CHECKING:
    from mypy_boto3_ec2.type_defs import FilterTypeDef

# The resume file slurmctld writes for the call (power.resume_file).
RESUME_FILE_VARIABLE = "SLURM_RESUME_FILE"
# EC2 Fleet requests under way at once: an instant fleet of hundreds of GPU instances takes
# tens of seconds to answer, and requests of different pools and jobs do not wait on each other.
LAUNCH_THREADS = 8
# EC2's answers are eventually consistent: a new instance may be unknown to DescribeInstances,
# or have no address yet, for a moment after CreateFleet returns it.
DESCRIBE_ATTEMPTS = 10
DESCRIBE_DELAY = 2.0


@dataclass(frozen=True)
class Outcome:
    """What one request got: node -> instance id, and why the rest of its nodes got none."""

    request: Request
    instances: dict[str, str]
    error: str = ""

    @property
    def missing(self) -> list[str]:
        return [n for n in self.request.nodes if n not in self.instances]


def resume(ctx: Context, hostlist: str) -> dict[str, Any]:
    """Launch the nodes of ``hostlist``; returns what happened, by node."""
    config = ctx.config()
    pools = {p.name: p for p in config.elastic_pools}
    names = nodes.expand(ctx, hostlist)
    units, strangers = launch_units(names, resume_jobs(), config.elastic_pools)
    together = sum(len(u.nodes) for u in units if u.all_or_nothing)
    log(f"resume {hostlist}: {len(names)} node(s), {together} of them in all-or-nothing jobs")
    for name in strangers:
        log(f"{name} is no elastic node of this cluster: left to ResumeTimeout")
    now = float(ctx.clock())
    state = RetryState.load(ctx)  # read only; changed under its lock at the end
    downs: dict[str, list[str]] = {}
    to_send: list[Request] = []
    for unit in units:
        waiting = state.waiting(unit.pool, now)
        if waiting is None:
            to_send += requests(unit)
            continue
        # The pool's last launch failed and its retry is not due: EC2 is not asked again.
        due = time.strftime("%H:%M:%S UTC", time.gmtime(waiting.retry_at))
        downs.setdefault(f"{waiting.error} (next launch after {due})", []).extend(unit.nodes)
    outcomes = send(ctx, pools, to_send) if to_send else []
    launched: dict[str, str] = {}
    for outcome in outcomes:
        launched.update(outcome.instances)
        if outcome.missing:
            downs.setdefault(reason(Check.LAUNCH, outcome.error), []).extend(outcome.missing)
    for why, down in downs.items():
        nodes.take_down(ctx, down, why)
    if outcomes:
        record_retry(ctx, config.launch_retry, outcomes, now)
    return {"launched": launched, "down": {n: why for why, ns in downs.items() for n in ns}}


def resume_jobs() -> tuple[ResumeJob, ...]:
    """The jobs of the resume file, or none (no file: every node launches best effort)."""
    path = os.environ.get(RESUME_FILE_VARIABLE)
    if not path:
        return ()
    try:
        with open(path) as handle:
            return read_resume_file(handle.read())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log(f"cannot read {RESUME_FILE_VARIABLE} {path} ({exc}): every node launches best effort")
        return ()


def send(ctx: Context, pools: dict[str, ElasticPool], to_send: list[Request]) -> list[Outcome]:
    """Launch, release what an all-or-nothing job cannot use, and give Slurm the addresses."""
    subnet = ctx.get_parameter(DeployParameter.COMPUTE_SUBNET_ID)
    bucket = ctx.get_parameter(DeployParameter.BUCKET)
    if not subnet or not bucket:
        missing = DeployParameter.COMPUTE_SUBNET_ID if not subnet else DeployParameter.BUCKET
        raise AgentError(f"no parameter {ctx.parameter_name(missing)}")
    with ThreadPoolExecutor(max_workers=LAUNCH_THREADS) as pool:
        outcomes = list(
            pool.map(lambda r: launch_one(ctx, pools[r.unit.pool], r, subnet, bucket), to_send)
        )
    outcomes = all_or_nothing(ctx, outcomes)
    ids = [i for o in outcomes for i in o.instances.values()]
    addresses = instance_addresses(ctx, ctx.config().cluster, ids)
    placed = []
    for outcome in outcomes:
        lost = {n: i for n, i in outcome.instances.items() if i not in addresses}
        if lost:  # never seen with an address: not left running unowned
            nodes.terminate(ctx, list(lost.values()), "no private address")
            kept = {n: i for n, i in outcome.instances.items() if n not in lost}
            outcome = replace(outcome, instances=kept, error="launched but no private address")
        try:
            nodes.set_addresses(ctx, {n: addresses[i] for n, i in outcome.instances.items()})
        except AgentError as exc:  # slurmctld never took them: the instances would run unowned
            nodes.terminate(ctx, list(outcome.instances.values()), "Slurm has not its address")
            why = str(exc).rsplit(" failed: ", 1)[-1]
            outcome = replace(outcome, instances={}, error=f"Slurm took no address: {why}")
        placed.append(outcome)
    return placed


def launch_one(
    ctx: Context, pool: ElasticPool, request: Request, subnet: str, bucket: str
) -> Outcome:
    """One EC2 Fleet request, and its instances' names in the bucket."""
    token = uuid.uuid4().hex
    wanted = list(request.nodes)
    asked = launch.fleet_request(pool, subnet, len(wanted), token, request.minimum)
    try:
        answer = launch.fleet_result(dict(ctx.aws.ec2().create_fleet(**asked)))
    except Exception as exc:  # botocore's ClientError (throttled past its retries too)
        return Outcome(request, {}, client_error(exc))
    ids = list(answer.instance_ids)
    if len(ids) > len(wanted):  # never asked for; not left running unowned
        nodes.terminate(ctx, ids[len(wanted) :], "more instances than nodes")
        ids = ids[: len(wanted)]
    pairs = dict(zip(wanted, ids, strict=False))
    error = answer.error_text()
    if len(ids) < len(wanted) and not error:
        error = f"EC2 launched {len(ids)} of the {len(wanted)} instances asked"
    if not pairs:
        return Outcome(request, {}, error)
    names = launch_names_text({i: n for n, i in pairs.items()})
    try:
        ctx.aws.s3().put_object(Bucket=bucket, Key=launch_key(token), Body=names.encode())
    except Exception as exc:  # a node that cannot learn its name never joins
        nodes.terminate(ctx, list(pairs.values()), "its name could not be recorded")
        return Outcome(request, {}, f"cannot record the names of {len(pairs)}: {exc}")
    log(f"launch {token}: {len(pairs)} of {len(wanted)} {pool.instance_type} ({pool.capacity})")
    return Outcome(request, pairs, error)


def all_or_nothing(ctx: Context, outcomes: list[Outcome]) -> list[Outcome]:
    """An all-or-nothing job that did not get every node releases what it got (EC2 launches
    none short of a request's minimum; a job larger than one request is held to it here)."""
    short = {o.request.unit.job for o in outcomes if o.request.unit.job is not None and o.missing}
    out = []
    for outcome in outcomes:
        job = outcome.request.unit.job
        if job not in short:
            out.append(outcome)
            continue
        unit = outcome.request.unit
        got = sum(len(o.instances) for o in outcomes if o.request.unit.job == job)
        asked = sum(len(o.request.nodes) for o in outcomes if o.request.unit.job == job)
        cause = next((o.error for o in outcomes if o.request.unit.job == job and o.error), "")
        if outcome.instances:
            nodes.terminate(ctx, list(outcome.instances.values()), f"job {job} is short")
        why = f"job {job} needs its {asked} {unit.pool} nodes at once, EC2 launched {got}"
        out.append(replace(outcome, instances={}, error=f"{why}: {cause or 'released'}"))
    return out


def instance_addresses(ctx: Context, cluster: str, instance_ids: list[str]) -> dict[str, str]:
    """instance id -> private address, waiting a little for EC2 to know them all. By filter,
    200 ids a request and paged: an id EC2 does not know yet fails no request."""
    found: dict[str, str] = {}
    for attempt in range(DESCRIBE_ATTEMPTS):
        missing = sorted(set(instance_ids) - set(found))
        if not missing:
            break
        try:
            for chunk in chunks(missing, nodes.FILTER_VALUES_MAX):
                filters: list[FilterTypeDef] = [
                    {"Name": "instance-id", "Values": chunk},
                    {"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster]},
                ]
                for item in described_instances(ctx, filters):
                    if item.get("PrivateIpAddress"):
                        found[item["InstanceId"]] = item["PrivateIpAddress"]
        except Exception as exc:  # throttled past the client's retries: the next attempt
            log(f"describe {len(missing)} instances (attempt {attempt + 1}): {exc}")
        if len(found) < len(set(instance_ids)):
            ctx.sleep(DESCRIBE_DELAY)
    return found


def record_retry(ctx: Context, policy: Any, outcomes: Iterable[Outcome], now: float) -> None:
    """A pool whose request left nodes without an instance waits before its next launch; one
    that got every node forgets its failures."""
    failed: dict[str, str] = {}
    succeeded: set[str] = set()
    for outcome in outcomes:
        pool = outcome.request.unit.pool
        if outcome.missing:
            failed.setdefault(pool, reason(Check.LAUNCH, outcome.error))
        else:
            succeeded.add(pool)
    with RetryState.changing(ctx) as state:
        for pool, why in failed.items():
            entry = state.failed(pool, why, now, policy)
            log(f"pool {pool}: launch failure {entry.failures} in a row, next try in "
                f"{int(entry.retry_at - now)} s")  # fmt: skip
        for pool in succeeded - set(failed):
            state.succeeded(pool)


def chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def client_error(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and "Error" in response:
        error = response["Error"]
        return f"{error.get('Code', 'Error')}: {error.get('Message', '')}"
    return f"{type(exc).__name__}: {exc}"
