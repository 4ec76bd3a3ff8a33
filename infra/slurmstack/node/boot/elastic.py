"""Whether this instance is an elastic node, and its Slurm name if so (nodes of elastic pools
only, from `params`).

The head's ResumeProgram launches an elastic node's instance with the tag ELASTIC_TAG, from the
pool's own launch template (so with the same user data as the always-on nodes), and tags it with
NODE_NAME_TAG, the CLOUD node it runs, as soon as EC2 has said which instances it launched: a
second or so, well before boot gets here. Such a node runs slurmd under that name (the drop-in
SLURMD_ELASTIC_DROPIN_SOURCE, put in place here); an instance of the pool's Auto Scaling group
has no ELASTIC_TAG and stays a dynamic node named by its address.
"""

from __future__ import annotations

import shutil

from ...contract import (
    ELASTIC_TAG,
    NODE_NAME_TAG,
    SLURMD_ELASTIC_DROPIN_PATH,
    SLURMD_ELASTIC_DROPIN_SOURCE,
)
from ..context import AgentError, Context, log

# How long an elastic instance waits for its name (the launch names it within seconds; the
# launching program gives up on an instance it cannot name and terminates it).
NAME_TIMEOUT_SECONDS = 600.0
POLL_SECONDS = 2.0
# DescribeTags attempts before the boot step fails (throttling, a slow metadata service).
READ_ATTEMPTS = 5


def instance_tags(ctx: Context, instance_id: str) -> dict[str, str]:
    """The instance's tags (EC2 DescribeTags, which the pool's role may call)."""
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


def elastic_name(
    ctx: Context,
    instance_id: str,
    timeout: float = NAME_TIMEOUT_SECONDS,
    poll: float = POLL_SECONDS,
) -> str | None:
    """This instance's CLOUD node name, waiting for the tag; None for an always-on instance."""
    tags = instance_tags(ctx, instance_id)
    if ELASTIC_TAG not in tags:
        return None
    waited = 0.0
    while NODE_NAME_TAG not in tags:
        if waited >= timeout:
            raise AgentError(f"{instance_id} was launched as an elastic node but never named")
        log(f"elastic: waiting for {instance_id}'s {NODE_NAME_TAG} tag")
        ctx.sleep(poll)
        waited += poll
        tags = instance_tags(ctx, instance_id)
    log(f"elastic: {instance_id} is node {tags[NODE_NAME_TAG]}")
    return tags[NODE_NAME_TAG]


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
