"""`slurmstack logs FILE NODE`: one node's logs from the cluster's CloudWatch Logs groups, read
from a laptop with the operator's own credentials (read-only calls). Every node's log shipper
(`slurmstack-node follow-logs`) writes its files into one group per LogSource, in a stream
named by its instance id; NODE is that id, the Slurm node name (a pool's dynamic name from the
instance's address, an elastic node's from its launch's object in the bucket) or "head"."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from slurmstack.contract import (
    CLUSTER_TAG,
    HEAD_ROLE,
    LAUNCH_TAG,
    POOL_TAG,
    ROLE_TAG,
    DeployParameter,
    LogSource,
    launch_key,
    log_group_name,
    log_group_prefix,
    node_name,
    node_name_prefix,
    read_launch_names,
)
from slurmstack.plan import ClusterPlan

INSTANCE_ID = re.compile(r"^i-[0-9a-f]{8,17}$")
SINCE = re.compile(r"^(\d+)([smhd])$")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
FOLLOW_POLL_SECONDS = 5


class LogsError(Exception):
    """What the operator must hear, one line: an unknown node or cluster, a bad --since."""


@dataclass(frozen=True)
class Event:
    timestamp: int  # milliseconds since the epoch, as CloudWatch Logs keeps them
    source: str
    message: str
    event_id: str

    def line(self) -> str:
        stamp = datetime.fromtimestamp(self.timestamp / 1000, UTC)
        return f"{stamp.strftime('%Y-%m-%dT%H:%M:%S.%f')[:-3]}Z {self.source}: {self.message}"


def since_millis(text: str, now: float) -> int:
    """--since: an age (30s, 10m, 2h, 1d) or an ISO 8601 time (UTC unless it says)."""
    match = SINCE.match(text)
    if match:
        return int((now - int(match[1]) * UNIT_SECONDS[match[2]]) * 1000)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise LogsError(
            f"--since {text!r}: give an age (30s, 10m, 2h, 1d) or a time (2025-06-15T15:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _tags(instance: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in instance.get("Tags", [])}


def elastic_names(
    session: Any, plan: ClusterPlan, instances: list[dict[str, Any]]
) -> dict[str, str]:
    """Instance id -> Slurm name of the elastic instances: the head writes each launch's names
    to the bucket (contract LAUNCH_TAG), as EC2 cannot tag each instance of one request."""
    launches = {_tags(i)[LAUNCH_TAG] for i in instances if LAUNCH_TAG in _tags(i)}
    if not launches:
        return {}
    ssm = session.client("ssm", region_name=plan.region)
    s3 = session.client("s3", region_name=plan.region)
    try:
        bucket = ssm.get_parameter(Name=plan.parameter(DeployParameter.BUCKET))["Parameter"]
    except ssm.exceptions.ParameterNotFound:
        return {}
    names: dict[str, str] = {}
    for launch in sorted(launches):
        try:
            body = s3.get_object(Bucket=bucket["Value"], Key=launch_key(launch))["Body"].read()
        except s3.exceptions.NoSuchKey:
            continue
        names |= read_launch_names(body)
    return names


def _names(plan: ClusterPlan, instance: dict[str, Any], elastic: dict[str, str]) -> set[str]:
    """The names NODE may give this instance."""
    tags = _tags(instance)
    names = {instance["InstanceId"]}
    if tags.get(ROLE_TAG) == HEAD_ROLE:
        names.add("head")
    if instance["InstanceId"] in elastic:
        names.add(elastic[instance["InstanceId"]])
    address = instance.get("PrivateIpAddress")
    if address and tags.get(POOL_TAG) in {p.name for p in plan.pools}:
        names.add(node_name(node_name_prefix(tags[POOL_TAG]), address))
    return names


def cluster_instances(ec2: Any, plan: ClusterPlan) -> list[dict[str, Any]]:
    filters = [{"Name": f"tag:{CLUSTER_TAG}", "Values": [plan.name]}]
    pages = ec2.get_paginator("describe_instances").paginate(Filters=filters)
    return [i for page in pages for r in page["Reservations"] for i in r["Instances"]]


def resolve(session: Any, plan: ClusterPlan, node: str) -> str:
    """The instance id whose stream holds ``node``'s logs."""
    ec2 = session.client("ec2", region_name=plan.region)
    instances = cluster_instances(ec2, plan)
    elastic = elastic_names(session, plan, instances) if not INSTANCE_ID.match(node) else {}
    matches = [i for i in instances if node in _names(plan, i, elastic)]
    if matches:  # a name reused by a replacement: the newest instance
        return str(max(matches, key=lambda i: str(i.get("LaunchTime", "")))["InstanceId"])
    if INSTANCE_ID.match(node):  # an instance EC2 no longer lists: its stream outlives it
        return node
    if not instances and not _groups(session, plan):
        raise LogsError(
            f"cluster {plan.name} is not deployed in {plan.region}: no instance is tagged "
            f"{CLUSTER_TAG}={plan.name} and there is no log group {log_group_prefix(plan.name)}*"
        )
    raise LogsError(
        f"no node {node!r} in cluster {plan.name}: give a Slurm node name (sinfo -N), "
        f"'head', or an instance id (`slurmstack status` lists them)"
    )


def _groups(session: Any, plan: ClusterPlan) -> list[str]:
    logs = session.client("logs", region_name=plan.region)
    pages = logs.get_paginator("describe_log_groups").paginate(
        logGroupNamePrefix=log_group_prefix(plan.name)
    )
    return [g["logGroupName"] for page in pages for g in page["logGroups"]]


def read_events(
    session: Any, plan: ClusterPlan, instance: str, sources: list[LogSource], start: int | None
) -> list[Event]:
    """The instance's events of ``sources`` from ``start`` on, oldest first."""
    logs = session.client("logs", region_name=plan.region)
    found: list[Event] = []
    for source in sources:
        args: dict[str, Any] = {
            "logGroupName": log_group_name(plan.name, source),
            "logStreamNames": [instance],
        }
        if start is not None:
            args["startTime"] = start
        try:
            for page in logs.get_paginator("filter_log_events").paginate(**args):
                found += [
                    Event(e["timestamp"], source.value, e["message"], e["eventId"])
                    for e in page["events"]
                ]
        except logs.exceptions.ResourceNotFoundException:
            continue  # no such group (slurmdbd without accounting) or no stream in it
    return sorted(found, key=lambda e: (e.timestamp, e.event_id))


def node_logs(
    session: Any,
    plan: ClusterPlan,
    node: str,
    sources: list[LogSource],
    start: int | None,
    follow: bool = False,
    sleep: Callable[[float], None] | None = None,
    polls: int | None = None,
) -> Iterator[Event]:
    """``node``'s events; with ``follow``, then new ones as they come (``polls`` bounds it for
    tests; the command runs until Ctrl-C)."""
    instance = resolve(session, plan, node)
    seen: set[str] = set()
    events = read_events(session, plan, instance, sources, start)
    if not events and not follow:
        raise LogsError(
            f"no logs of {node} ({instance}) in {log_group_prefix(plan.name)}"
            f"{{{','.join(s.value for s in sources)}}}"
            + (" in that time" if start is not None else "")
            + ": its log shipper (slurmstack-log-shipper.service) may not have run yet"
        )
    done = 0
    while True:
        for event in events:
            if event.event_id not in seen:
                seen.add(event.event_id)
                yield event
        if not follow or (polls is not None and done >= polls):
            return
        done += 1
        if sleep is not None:
            sleep(FOLLOW_POLL_SECONDS)
        last = max((e.timestamp for e in events), default=start)
        events = read_events(session, plan, instance, sources, last)
