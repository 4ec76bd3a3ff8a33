"""ResumeProgram: launch an instance for each elastic node slurmctld powers up, name it, and
tell slurmctld its address; nodes that get no instance go DOWN with EC2's error."""

from __future__ import annotations

import time
import uuid
from typing import Any

from ...contract import NODE_NAME_TAG, Check, DeployParameter, ElasticPool, reason
from ..context import AgentError, Context, log
from . import launch, nodes
from .retry import RetryState

# EC2's answers are eventually consistent: a new instance may be unknown to DescribeInstances,
# or have no address yet, for a moment after CreateFleet returns it.
DESCRIBE_ATTEMPTS = 10
DESCRIBE_DELAY = 2.0


def resume(ctx: Context, hostlist: str) -> dict[str, Any]:
    """Launch the nodes of ``hostlist``; returns what happened, by pool."""
    config = ctx.config()
    pools = {p.name: p for p in config.elastic_pools}
    names = nodes.expand(ctx, hostlist)
    log(f"resume {hostlist}: {len(names)} node(s)")
    grouped, strangers = nodes.by_pool(names, config.elastic_pools)
    for name in strangers:
        log(f"{name} is no elastic node of this cluster: left to ResumeTimeout")
    state = RetryState.load(ctx)
    subnet: str | None = None
    result: dict[str, Any] = {"launched": {}, "down": {}}
    for pool_name, wanted in grouped.items():
        pool = pools[pool_name]
        now = float(ctx.clock())
        waiting = state.waiting(pool_name, now)
        if waiting is not None:
            # The pool's last launch failed and its retry is not due: EC2 is not asked again.
            due = time.strftime("%H:%M:%S UTC", time.gmtime(waiting.retry_at))
            why = f"{waiting.error} (next launch after {due})"
            nodes.take_down(ctx, wanted, why)
            result["down"].update(dict.fromkeys(wanted, why))
            continue
        if subnet is None:
            subnet = ctx.get_parameter(DeployParameter.COMPUTE_SUBNET_ID)
            if not subnet:
                raise AgentError(
                    f"no parameter {ctx.parameter_name(DeployParameter.COMPUTE_SUBNET_ID)}"
                )
        launched, failed, error = launch_pool(ctx, pool, wanted, subnet)
        result["launched"].update(launched)
        if failed:
            why = reason(Check.LAUNCH, error)
            nodes.take_down(ctx, failed, why)
            result["down"].update(dict.fromkeys(failed, why))
            entry = state.failed(pool_name, why, now, config.launch_retry)
            log(
                f"pool {pool_name}: launch failure {entry.failures} in a row, next try in "
                f"{int(entry.retry_at - now)} s"
            )
        else:
            state.succeeded(pool_name)
    state.save(ctx)
    return result


def launch_pool(
    ctx: Context, pool: ElasticPool, wanted: list[str], subnet: str
) -> tuple[dict[str, str], list[str], str]:
    """Launch instances for the nodes ``wanted`` of ``pool``: (node -> instance id of those
    that run and have their address in Slurm, nodes that got none, EC2's error for them)."""
    ec2 = ctx.aws.ec2()
    request = launch.fleet_request(pool, subnet, len(wanted), uuid.uuid4().hex)
    try:
        answer = launch.fleet_result(dict(ec2.create_fleet(**request)))
    except Exception as exc:  # botocore's ClientError and connection errors
        return {}, wanted, _client_error(exc)
    ids = list(answer.instance_ids)
    error = answer.error_text() or f"EC2 launched {len(ids)} of the {len(wanted)} instances asked"
    if len(ids) > len(wanted):  # never asked for; not left running unowned
        nodes.terminate(ctx, ids[len(wanted) :], "more instances than nodes")
        ids = ids[: len(wanted)]
    pairs = dict(zip(wanted, ids, strict=False))
    for name, instance in pairs.items():
        log(f"{name}: {instance} ({pool.capacity}, {pool.instance_type})")
    failed = wanted[len(ids) :]
    launched: dict[str, str] = {}
    tagged = _name_instances(ctx, pairs)
    addresses = _addresses(ctx, list(tagged.values()))
    for name, instance in pairs.items():
        address = addresses.get(instance)
        if name not in tagged or address is None:
            why = "untagged" if name not in tagged else "no private address"
            nodes.terminate(ctx, [instance], f"{name}: {why}")
            failed.append(name)
            error = f"{instance} launched but {why}"
            continue
        nodes.set_address(ctx, name, address)
        launched[name] = instance
    return launched, sorted(failed, key=wanted.index), error


def _name_instances(ctx: Context, pairs: dict[str, str]) -> dict[str, str]:
    """Tag each instance with its node's name (the node reads it at boot); node -> instance
    of those tagged."""
    tagged = {}
    for name, instance in pairs.items():
        try:
            ctx.aws.ec2().create_tags(
                Resources=[instance], Tags=[{"Key": NODE_NAME_TAG, "Value": name}]
            )
            tagged[name] = instance
        except Exception as exc:  # a node without its name never joins: dropped below
            log(f"{name}: cannot tag {instance}: {exc}")
    return tagged


def _addresses(ctx: Context, instance_ids: list[str]) -> dict[str, str]:
    """instance id -> private address, waiting a little for EC2 to know them all."""
    found: dict[str, str] = {}
    for attempt in range(DESCRIBE_ATTEMPTS):
        missing = [i for i in instance_ids if i not in found]
        if not missing:
            break
        try:
            pages = ctx.aws.ec2().get_paginator("describe_instances").paginate(InstanceIds=missing)
            for page in pages:
                for reservation in page["Reservations"]:
                    for item in reservation["Instances"]:
                        if item.get("PrivateIpAddress"):
                            found[item["InstanceId"]] = item["PrivateIpAddress"]
        except Exception as exc:  # InvalidInstanceID.NotFound right after launch
            log(f"describe {', '.join(missing)} (attempt {attempt + 1}): {exc}")
        if len(found) < len(instance_ids):
            ctx.sleep(DESCRIBE_DELAY)
    return found


def _client_error(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and "Error" in response:
        error = response["Error"]
        return f"{error.get('Code', 'Error')}: {error.get('Message', '')}"
    return f"{type(exc).__name__}: {exc}"
