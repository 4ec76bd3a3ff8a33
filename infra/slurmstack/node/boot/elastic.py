"""Whether this instance is an elastic node, and its Slurm name if so (nodes of elastic pools
only, from `params`).

The head's ResumeProgram launches an elastic node's instance with the tags ELASTIC_TAG and
LAUNCH_TAG (the launch's id), from the pool's own launch template (so with the same user data as
the always-on nodes), and writes the names of the launch's instances to one object of the bucket
(launch_key) as soon as EC2 has said which instances it launched: a second or so, well before
boot gets here. The node reads its tags from the instance metadata (the elastic pools' launch
templates put them there), so knowing what it is costs no API call, and its name from that
object: one S3 read. Such a node runs slurmd under that name (the drop-in
SLURMD_ELASTIC_DROPIN_SOURCE, put in place here); an instance of the pool's Auto Scaling group
has no ELASTIC_TAG and stays a dynamic node named by its address.
"""

from __future__ import annotations

import shutil

from ...contract import (
    ELASTIC_TAG,
    LAUNCH_TAG,
    SLURMD_ELASTIC_DROPIN_PATH,
    SLURMD_ELASTIC_DROPIN_SOURCE,
    DeployParameter,
    aws_error_code,
    is_retryable,
    launch_key,
    read_launch_names,
)
from ..context import AgentError, Context, log, metadata

# How long an elastic instance waits for its name (the launch names it within seconds; the
# launching program terminates an instance it cannot name, the sweep one no node runs on).
NAME_TIMEOUT_SECONDS = 600.0
POLL_SECONDS = 2.0
# DescribeTags attempts before the boot step fails (throttling, a slow metadata service).
READ_ATTEMPTS = 5


def instance_tags(ctx: Context, instance_id: str) -> dict[str, str]:
    """The instance's tags from EC2 (DescribeTags, which the pool's role may call): for a
    launch template that does not put them in the instance metadata."""
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            pages = (
                ctx.aws.ec2()
                .get_paginator("describe_tags")
                .paginate(Filters=[{"Name": "resource-id", "Values": [instance_id]}])
            )
            return {t["Key"]: t["Value"] for page in pages for t in page["Tags"]}
        except Exception as exc:  # botocore's errors: throttled, or credentials not there yet
            log(f"elastic: cannot read the tags of {instance_id} ({exc}), attempt {attempt}")
            if attempt == READ_ATTEMPTS:
                raise AgentError(f"cannot read the tags of {instance_id}: {exc}") from exc
            ctx.sleep(POLL_SECONDS)
    raise AssertionError("unreachable")


def launch_tags(ctx: Context, instance_id: str) -> dict[str, str]:
    """ELASTIC_TAG and LAUNCH_TAG of this instance, as it has them: from the instance metadata
    (no API call), or, where the launch template does not put tags there, from DescribeTags."""
    listing = metadata(ctx, "tags/instance")
    if listing is None:
        return instance_tags(ctx, instance_id)
    keys = [k for k in listing.split() if k in (ELASTIC_TAG, LAUNCH_TAG)]
    return {k: metadata(ctx, f"tags/instance/{k}") or "" for k in keys}


def elastic_name(
    ctx: Context,
    instance_id: str,
    timeout: float = NAME_TIMEOUT_SECONDS,
    poll: float = POLL_SECONDS,
) -> str | None:
    """This instance's CLOUD node name, waiting for its launch's names; None for an always-on
    instance."""
    tags = launch_tags(ctx, instance_id)
    if ELASTIC_TAG not in tags:
        return None
    launch = tags.get(LAUNCH_TAG)
    if not launch:
        raise AgentError(f"{instance_id} was launched as an elastic node with no {LAUNCH_TAG}")
    bucket = ctx.wait_parameter(DeployParameter.BUCKET)
    waited = 0.0
    while True:
        try:
            body = ctx.aws.s3().get_object(Bucket=bucket, Key=launch_key(launch))["Body"].read()
            name = read_launch_names(body).get(instance_id)
            if name:
                log(f"elastic: {instance_id} is node {name}")
                return name
        except Exception as exc:  # not written yet (NoSuchKey), or throttled past retries
            if aws_error_code(exc) != "NoSuchKey" and not is_retryable(exc):
                raise
        if waited >= timeout:
            raise AgentError(f"{instance_id} was launched as an elastic node but never named")
        log(f"elastic: waiting for the names of launch {launch}")
        ctx.sleep(poll)
        waited += poll


def slurmd_dropin(ctx: Context, elastic: bool) -> None:
    """slurmd as a CLOUD node (the drop-in in place) or as a dynamic node (no drop-in)."""
    target = ctx.path(SLURMD_ELASTIC_DROPIN_PATH)
    if elastic:
        source = ctx.path(SLURMD_ELASTIC_DROPIN_SOURCE)
        if not source.exists():
            raise AgentError(f"{SLURMD_ELASTIC_DROPIN_SOURCE} is missing (sync-config writes it)")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        target.chmod(0o644)
    else:
        target.unlink(missing_ok=True)
