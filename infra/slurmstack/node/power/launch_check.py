"""launch-check: at the head's boot, whether the head may launch each elastic pool, asked of
EC2 itself before any job needs it.

For each elastic pool the head sends the very CreateFleet request its ResumeProgram would send
for one node (slurmstack.node.power.launch.fleet_request: the pool's launch template, the compute
subnet, the pool's capacity type and its tags on the instance and the fleet), with DryRun. EC2
checks the caller's permissions and answers DryRunOperation ("Request would have succeeded")
or UnauthorizedOperation, launching nothing (EC2 API Reference, CreateFleet, DryRun). EC2 does
not document whether an instant fleet's launch is authorised with the request's tags (the head's
role allows launches only of instances tagged as the cluster's); the dry run answers that for
this account, with these tags.

A pool the head may not launch is an event (slurmstack.node.events) and a plain line on the
console, and its nodes go DOWN at once with the refusal as their reason (the `launch` check's
reason form) and the pool waits as after a failed launch (slurmstack.node.power.retry): a job
for it shows why it pends, from the first minute, and the power sweep offers the nodes again
when the retry is due, so a fixed role is picked up without a reboot. The step never fails the
boot: the rest of the cluster works."""

from __future__ import annotations

import uuid
from typing import Any

from ...contract import Check, DeployParameter, ElasticPool
from ...contract import reason as make_reason
from ..context import AgentError, Context
from ..events import record_event
from . import launch, nodes
from .retry import RetryState

EVENT = "launch-check"
# What EC2 answers a permitted dry run with (botocore raises it as a ClientError).
PERMITTED = "DryRunOperation"
GRANT = (
    "the head node's role must be allowed to launch this pool (CreateFleet and RunInstances from "
    "the pool's launch template with the cluster's tags, iam:PassRole of the pool's role): see "
    "docs/images.md, 'Permissions an operator may need'"
)


def dry_run(ctx: Context, pool: ElasticPool, subnet: str) -> tuple[bool, str]:
    """(permitted, EC2's answer) for launching one node of ``pool``."""
    request: dict[str, Any] = launch.fleet_request(pool, subnet, 1, uuid.uuid4().hex)
    try:
        answer = ctx.aws.ec2().create_fleet(DryRun=True, **request)
    except Exception as exc:  # botocore's ClientError carries EC2's code
        text = launch_error(exc)
        return text.startswith(PERMITTED + ":"), text
    # A dry run never launches; an endpoint that ignored the flag did: nothing is left running.
    launched = launch.fleet_result(dict(answer)).instance_ids
    if launched:
        nodes.terminate(ctx, list(launched), f"launch-check: {pool.name} launched by a dry run")
    return True, f"EC2 launched {len(launched)} instance(s) for a dry run (terminated)"


def launch_error(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and "Error" in response:
        error = response["Error"]
        return f"{error.get('Code', 'Error')}: {error.get('Message', '')}"
    return f"{type(exc).__name__}: {exc}"


def launch_check(ctx: Context) -> dict[str, Any]:
    """Dry-run a launch per elastic pool; returns {"ok": [...], "refused": {pool: answer}}."""
    config = ctx.config()
    result: dict[str, Any] = {"ok": [], "refused": {}}
    if not config.elastic_pools:
        return result
    subnet = ctx.get_parameter(DeployParameter.COMPUTE_SUBNET_ID)
    if not subnet:
        raise AgentError(f"no parameter {ctx.parameter_name(DeployParameter.COMPUTE_SUBNET_ID)}")
    refused: dict[str, str] = {}
    for pool in config.elastic_pools:
        permitted, answer = dry_run(ctx, pool, subnet)
        if permitted:
            record_event(ctx, EVENT, pool.name, True, f"the head may launch this pool ({answer})")
            result["ok"].append(pool.name)
            continue
        detail = f"the head may not launch this pool: {answer}; {GRANT}"
        record_event(ctx, EVENT, pool.name, False, detail, nodes=pool.node_names)
        result["refused"][pool.name] = answer
        reason = make_reason(Check.LAUNCH, f"dry run refused: {answer}")
        try:
            nodes.take_down(ctx, nodes.expand(ctx, pool.node_names), reason)
        except Exception as exc:  # slurmctld not answering: the event above still says it
            record_event(ctx, EVENT, pool.name, False, f"could not set its nodes DOWN: {exc}")
        refused[pool.name] = reason
    if refused:  # under the power programs' lock: a resume running now loses no change
        with RetryState.changing(ctx) as state:
            for name, reason in refused.items():
                state.failed(name, reason, float(ctx.clock()), config.launch_retry)
    return result
