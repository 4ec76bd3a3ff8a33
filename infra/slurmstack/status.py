"""`slurmstack status FILE`: the operator's view of a deployed cluster from a laptop, read from
AWS with the operator's own credentials (read-only calls): the head node, each pool's group
(its nodes by lifecycle state and health, the breaker: the controller suspends the group's
ReplaceUnhealthy process when it trips), the pool's elastic nodes, the recent repair actions
(the groups' own activity history: every replacement the controller asked for is one), and the
alert topic with its subscriptions. Names come from the definition, as the stack made them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from slurmstack.contract import (
    CLUSTER_TAG,
    ELASTIC_TAG,
    HEAD_ROLE,
    POOL_ROLE,
    ROLE_TAG,
    DeployParameter,
    resource_name,
)
from slurmstack.plan import ClusterPlan

# What the controller suspends when a pool's breaker trips (node/controller/actions.py).
BREAKER_PROCESS = "ReplaceUnhealthy"
ACTIVITIES = 10  # recent repair actions shown, newest first
LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]


@dataclass(frozen=True)
class PoolStatus:
    name: str
    group: str
    found: bool
    desired: int = 0
    states: dict[str, int] = field(default_factory=dict)  # lifecycle state -> instances
    unhealthy: list[str] = field(default_factory=list)
    breaker_open: bool = False
    elastic_running: int = 0


@dataclass(frozen=True)
class Activity:
    time: str
    pool: str
    status: str
    description: str
    cause: str


@dataclass(frozen=True)
class ClusterStatus:
    cluster: str
    region: str
    head: dict[str, str] | None
    pools: list[PoolStatus]
    activities: list[Activity]
    alert_topic: str | None
    subscriptions: dict[str, int]  # confirmed / pending

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _head(ec2: Any, plan: ClusterPlan) -> dict[str, str] | None:
    filters = [
        {"Name": f"tag:{CLUSTER_TAG}", "Values": [plan.name]},
        {"Name": f"tag:{ROLE_TAG}", "Values": [HEAD_ROLE]},
        {"Name": "instance-state-name", "Values": LIVE_STATES},
    ]
    for page in ec2.get_paginator("describe_instances").paginate(Filters=filters):
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                return {
                    "instance": instance["InstanceId"],
                    "state": instance["State"]["Name"],
                    "address": instance.get("PrivateIpAddress", ""),
                }
    return None


def _elastic_running(ec2: Any, plan: ClusterPlan, pool: str) -> int:
    filters = [
        {"Name": f"tag:{CLUSTER_TAG}", "Values": [plan.name]},
        {"Name": f"tag:{ELASTIC_TAG}", "Values": [pool]},
        {"Name": "instance-state-name", "Values": ["pending", "running"]},
    ]
    pages = ec2.get_paginator("describe_instances").paginate(Filters=filters)
    return sum(len(r["Instances"]) for page in pages for r in page["Reservations"])


def _pool(autoscaling: Any, ec2: Any, plan: ClusterPlan, pool: str) -> PoolStatus:
    group = resource_name(plan.name, POOL_ROLE, pool)
    found = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])
    if not found["AutoScalingGroups"]:
        return PoolStatus(pool, group, found=False)
    g = found["AutoScalingGroups"][0]
    states: dict[str, int] = {}
    for instance in g.get("Instances", []):
        states[instance["LifecycleState"]] = states.get(instance["LifecycleState"], 0) + 1
    return PoolStatus(
        name=pool,
        group=group,
        found=True,
        desired=int(g["DesiredCapacity"]),
        states=dict(sorted(states.items())),
        unhealthy=sorted(
            i["InstanceId"] for i in g.get("Instances", []) if i["HealthStatus"] != "Healthy"
        ),
        breaker_open=any(
            p["ProcessName"] == BREAKER_PROCESS for p in g.get("SuspendedProcesses", [])
        ),
        elastic_running=_elastic_running(ec2, plan, pool),
    )


def _activities(autoscaling: Any, pools: list[PoolStatus]) -> list[Activity]:
    out = []
    for pool in pools:
        if not pool.found:
            continue
        answer = autoscaling.describe_scaling_activities(
            AutoScalingGroupName=pool.group, MaxRecords=ACTIVITIES
        )
        for a in answer["Activities"]:
            started = a["StartTime"]
            stamp = (
                started.strftime("%Y-%m-%dT%H:%M:%SZ") if hasattr(started, "strftime") else started
            )
            out.append(
                Activity(stamp, pool.name, a["StatusCode"], a["Description"], a.get("Cause", ""))
            )
    return sorted(out, key=lambda a: a.time, reverse=True)[:ACTIVITIES]


def _alerts(ssm: Any, sns: Any, plan: ClusterPlan) -> tuple[str | None, dict[str, int]]:
    try:
        topic = ssm.get_parameter(Name=plan.parameter(DeployParameter.ALERT_TOPIC_ARN))
    except ssm.exceptions.ParameterNotFound:
        return None, {}
    arn = str(topic["Parameter"]["Value"])
    counts = {"confirmed": 0, "pending": 0}
    for page in sns.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=arn):
        for subscription in page["Subscriptions"]:
            pending = subscription["SubscriptionArn"] == "PendingConfirmation"
            counts["pending" if pending else "confirmed"] += 1
    return arn, counts


def cluster_status(plan: ClusterPlan, session: Any) -> ClusterStatus:
    """What AWS says of the cluster ``plan`` names; ``session``: a boto3 Session."""
    ec2 = session.client("ec2", region_name=plan.region)
    autoscaling = session.client("autoscaling", region_name=plan.region)
    pools = [_pool(autoscaling, ec2, plan, p.name) for p in plan.pools]
    topic, subscriptions = _alerts(
        session.client("ssm", region_name=plan.region),
        session.client("sns", region_name=plan.region),
        plan,
    )
    return ClusterStatus(
        cluster=plan.name,
        region=plan.region,
        head=_head(ec2, plan),
        pools=pools,
        activities=_activities(autoscaling, pools),
        alert_topic=topic,
        subscriptions=subscriptions,
    )


def status_lines(status: ClusterStatus) -> list[str]:
    head = status.head
    lines = [
        f"cluster {status.cluster} ({status.region})",
        "head: " + (f"{head['instance']} {head['state']} {head['address']}" if head else "none"),
    ]
    for pool in status.pools:
        if not pool.found:
            lines.append(f"pool {pool.name}: no group {pool.group} (not deployed?)")
            continue
        states = ", ".join(f"{n} {s}" for s, n in pool.states.items()) or "no instances"
        breaker = "OPEN (replacements stopped)" if pool.breaker_open else "closed"
        lines.append(
            f"pool {pool.name}: {pool.desired} wanted; {states}; "
            f"{len(pool.unhealthy)} unhealthy; breaker {breaker}; "
            f"{pool.elastic_running} elastic running"
        )
        lines += [f"  unhealthy: {i}" for i in pool.unhealthy]
    lines.append("recent repair actions (Auto Scaling activities, newest first):")
    lines += [f"  {a.time} {a.pool} {a.status}: {a.description}" for a in status.activities] or [
        "  none"
    ]
    if status.alert_topic is None:
        lines.append("alerts: no topic parameter (not deployed?)")
    else:
        subs = status.subscriptions
        lines.append(
            f"alerts: {status.alert_topic} ({subs['confirmed']} confirmed, "
            f"{subs['pending']} pending confirmation)"
        )
    return lines
