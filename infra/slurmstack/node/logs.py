"""ship-logs: this node's boot, health and slurmd logs to the cluster bucket, so they outlive
the instance. Under logs/<pool>/<instance ARN>/ (slurmstack.contract.log_prefix): the one prefix
the node's role may write, named through IAM's policy variable ec2:SourceInstanceARN. Each file
keeps its path on the node; the marker written last lists them, and the head's controller waits
for it before it lets a terminating instance go."""

from __future__ import annotations

import json
import time

from ..contract import (
    LOGS_SHIPPED_MARKER,
    SHIPPED_LOGS,
    DeployParameter,
    instance_arn,
    log_prefix,
)
from .context import AgentError, Context, log

# The tail of each file (a slurmd log of a long-lived node can be large).
MAX_BYTES = 8 * 1024 * 1024
IDENTITY = "dynamic/instance-identity/document"


def tail(data: bytes) -> bytes:
    return data[-MAX_BYTES:]


def own_prefix(ctx: Context) -> str:
    config = ctx.config()
    if config.is_head:
        raise AgentError("the head node keeps its logs: ship-logs runs on a pool's nodes")
    identity = json.loads(ctx.imds(IDENTITY))
    arn = instance_arn(identity["region"], identity["accountId"], identity["instanceId"])
    return log_prefix(config.role, arn)


def ship_logs(ctx: Context, why: str) -> list[str]:
    """Copy the logs that exist; returns the keys written (the marker last)."""
    bucket = ctx.get_parameter(DeployParameter.BUCKET)
    if bucket is None:
        raise AgentError("the bucket's parameter is not readable")
    prefix = own_prefix(ctx)
    s3 = ctx.aws.s3()
    written, files = [], []
    for node_path in SHIPPED_LOGS:
        path = ctx.path(node_path)
        if not path.is_file():
            continue
        key = prefix + node_path.lstrip("/")
        s3.put_object(Bucket=bucket, Key=key, Body=tail(path.read_bytes()))
        written.append(key)
        files.append(node_path)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ctx.clock()))
    marker = json.dumps({"why": why, "time": stamp, "files": files}, sort_keys=True)
    s3.put_object(Bucket=bucket, Key=prefix + LOGS_SHIPPED_MARKER, Body=marker.encode())
    written.append(prefix + LOGS_SHIPPED_MARKER)
    log(f"logs copied to s3://{bucket}/{prefix} ({why})")
    return written
