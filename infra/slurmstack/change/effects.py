"""What a resource change does to the running cluster, in five classes a platform engineer
can act on: no effect, configuration pushed live, rolling node replacement (drained batch
by batch), head restart (scheduling paused, jobs keep running), and disruptive (a pool's
nodes terminated, a file system or the state volume replaced or deleted: data lost).

The rules are data (``RULES`` and the tables below), read by the docs page
(docs/changing-a-cluster.md) as well as by ``classify``.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any

from slurmstack.change.diff import Action, ResourceChange
from slurmstack.change.snapshot import ResourceState
from slurmstack.report.timing import HEAD_BOOT, NODE_BOOT, creation_time


class Effect(enum.StrEnum):
    NONE = "none"
    LIVE = "live"
    ROLLING = "rolling"
    HEAD_RESTART = "head-restart"
    DISRUPTIVE = "disruptive"

    @property
    def rank(self) -> int:
        return list(Effect).index(self)

    @property
    def label(self) -> str:
        return EFFECT_LABELS[self]


EFFECT_LABELS = {
    Effect.NONE: "no effect",
    Effect.LIVE: "pushed live",
    Effect.ROLLING: "rolling replacement",
    Effect.HEAD_RESTART: "head restart",
    Effect.DISRUPTIVE: "DISRUPTIVE",
}
EFFECT_MEANING = {
    Effect.NONE: "nothing running notices (tags, new resources nothing uses yet, image builds)",
    Effect.LIVE: "applied to the running cluster in place: configuration reaches the head and "
    "is reloaded, groups resize, permissions and parameters change; no job stops",
    Effect.ROLLING: "a pool's nodes are replaced by its instance refresh, a batch at a time, "
    "each node drained first (its jobs end before it goes)",
    Effect.HEAD_RESTART: "the head node stops or is replaced: scheduling pauses for minutes, "
    "running jobs keep running, its address and state volume are kept",
    Effect.DISRUPTIVE: "a pool's nodes are terminated with their jobs, or a file system, the "
    "bucket, the state volume or the accounting database is replaced or deleted: data lost",
}

GROUP = "aws:autoscaling/group:Group"
DRAIN_HOOK = "aws:autoscaling/lifecycleHook:LifecycleHook"
INSTANCE = "aws:ec2/instance:Instance"
VOLUME = "aws:ebs/volume:Volume"
VOLUME_ATTACHMENT = "aws:ec2/volumeAttachment:VolumeAttachment"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
DATA_REPOSITORY = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"

# What replacing or deleting a stateful resource loses (also the preflight's message).
DATA_LOST = {
    "aws:fsx/lustreFileSystem:LustreFileSystem": "the Lustre file system and every file on it "
    "not yet exported to the bucket",
    "aws:efs/fileSystem:FileSystem": "the EFS file system (/home) and every file on it",
    VOLUME: "the head's state volume: Slurm's state (queued and running jobs' records, job "
    "ids) and the accounting database kept on it",
    "aws:s3/bucket:Bucket": "the cluster bucket and every object in it (datasets, checkpoints)",
    "aws:rds/instance:Instance": "the accounting database (usage records, associations)",
}

# Replacing these ends something running, without losing data.
REPLACE_DISRUPTS = {
    PLACEMENT_GROUP: "the placement group cannot be deleted while the "
    "pool's nodes run in it: every node of the pool has to go",
    "aws:ec2/securityGroup:SecurityGroup": "a security group in use cannot be deleted: the "
    "instances using it have to be relaunched",
    "aws:ec2/vpc:Vpc": "the network is replaced: every instance in it goes",
    "aws:ec2/subnet:Subnet": "the subnet is replaced: every instance and file system in it goes",
    "aws:efs/mountTarget:MountTarget": "/home's mount target gets a new address: every node's "
    "/home hangs until it is remounted",
    "random:index/randomBytes:RandomBytes": "a new munge key: nodes holding the old key can "
    "no longer talk to the head",
    "aws:secretsmanager/secret:Secret": "a new secret: nodes fetch a key the running ones do "
    "not hold",
}
REPLACE_RESTARTS_HEAD = {
    INSTANCE: "the head node is replaced",
    "aws:ec2/networkInterface:NetworkInterface": "the head's network interface is replaced: "
    "a new address, and the head is replaced with it",
    VOLUME_ATTACHMENT: "the state volume is re-attached: the head stops first",
}
# Changes of these never touch a running process.
NO_EFFECT_TYPES = {
    LAUNCH_TEMPLATE,  # its group's change says what follows
    # Config store and image bundles: the manifest's parameter and the association (config)
    # or the image build (bundles) say what follows.
    "aws:s3/bucketObjectv2:BucketObjectv2",
    "aws:imagebuilder/component:Component",
    "aws:imagebuilder/imageRecipe:ImageRecipe",
    "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration",
    "aws:imagebuilder/image:Image",
}
TAG_INPUTS = {"tags", "tagsAll"}
# What an in-place update of these means on the running cluster.
LIVE_MEANING = {
    "aws:ssm/association:Association": "the head pulls the new configuration and Slurm "
    "reloads it (scontrol reconfigure)",
    "aws:ssm/parameter:Parameter": "nodes read the new value when they next boot or sync",
    "aws:ssm/document:Document": "the config-apply command changes for its next run",
    "aws:iam/rolePolicy:RolePolicy": "permissions change at once",
    "aws:iam/role:Role": "permissions change at once",
    "aws:s3/bucketPolicy:BucketPolicy": "the bucket's policy changes at once",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": "network rules change at once",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": "network rules change at once",
    "aws:fsx/lustreFileSystem:LustreFileSystem": "modified online; mounts stay",
    "aws:ebs/volume:Volume": "modified while attached",
    "aws:ec2/instance:Instance": "modified while running",
}
# Made anew, these act at once on what runs (a created resource is otherwise "no effect":
# nothing uses it yet).
CREATE_LIVE = {
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": "the port opens at once",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": "the traffic is allowed at once",
    DATA_REPOSITORY: "the bucket's prefix appears in the file system",
}
GROUP_SIZE = {"desiredCapacity", "minSize", "maxSize"}
GROUP_TEMPLATE = {"launchTemplate", "mixedInstancesPolicy"}
ASSOCIATION = "aws:ssm/association:Association"
# The push that targets the cluster's tag rather than the head (stack/config_store.py).
EVERY_NODE_PUSH = (
    "every node (workers, login nodes, head) pulls its files and applies the people "
    "(accounts, groups, keys, directory) in place, no reboot"
)


def _targets_every_node(state: ResourceState) -> bool:
    targets = state.inputs.get("targets") or []
    return any(str(t.get("key", "")).startswith("tag:") for t in targets if isinstance(t, dict))


@dataclass(frozen=True)
class Context:
    """Facts of the new definition the estimates need."""

    scale_in_wait_minutes: int = 120


@dataclass(frozen=True)
class Consequence:
    effect: Effect
    what: str
    seconds: tuple[int, int] | None = None  # how long it takes: (low, high)

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.effect.value,
            "effect": self.what,
            "seconds": list(self.seconds) if self.seconds else None,
        }


def duration(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _subject(state: ResourceState) -> str:
    if state.pool:
        return f"pool {state.pool}"
    return state.name


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def rolling(change: ResourceChange, context: Context) -> Consequence:
    """An instance refresh: (100 - min_healthy)% of the group per batch (at least one node),
    each batch booted and warmed up, a pause at each checkpoint; a busy node waits in the
    drain hook for its jobs, up to scale_in_wait_minutes."""
    old, new = change.old, change.state
    nodes = _int((old or new).inputs.get("desiredCapacity"), 0)
    pool = _subject(new)
    if nodes == 0:
        return Consequence(
            Effect.LIVE,
            f"{pool}: new template version; no node runs from the group, "
            "elastic nodes take it at their next start",
        )
    prefs = (new.inputs.get("instanceRefresh") or {}).get("preferences") or {}
    min_healthy = _int(prefs.get("minHealthyPercentage"), 90)
    warmup = _int(prefs.get("instanceWarmup"), 0)
    batch = max(1, nodes * (100 - min_healthy) // 100)
    batches = math.ceil(nodes / batch)
    # The refresh also waits checkpoint_delay at each checkpoint before the last (100%).
    checkpoints = [c for c in prefs.get("checkpointPercentages") or [] if _int(c, 100) < 100]
    pauses = len(checkpoints) * _int(prefs.get("checkpointDelay"), 0)
    low = batches * (NODE_BOOT.seconds + warmup) + pauses
    high = low + batches * context.scale_in_wait_minutes * 60
    return Consequence(
        Effect.ROLLING,
        f"{pool}: instance refresh replaces its {nodes} nodes {batch} at a time "
        f"({batches} batches), each drained first: about {duration(low)} if idle, up to "
        f"{duration(high)} if every batch waits {context.scale_in_wait_minutes} min for jobs; "
        "elastic nodes take the new version at their next start",
        (low, high),
    )


def head_restart(text: str) -> Consequence:
    low = HEAD_BOOT.seconds + creation_time(INSTANCE).seconds
    return Consequence(
        Effect.HEAD_RESTART,
        f"{text}: scheduling paused about {duration(low)} (slurmctld down; running jobs keep "
        "running, new ones wait)",
        (low, low),
    )


def _group_update(change: ResourceChange, context: Context) -> Consequence:
    changed = change.changed
    if changed & GROUP_TEMPLATE:
        refresh = rolling(change, context)
        if changed & GROUP_SIZE:
            before = _int(change.old.inputs.get("desiredCapacity") if change.old else 0, 0)
            after = _int(change.state.inputs.get("desiredCapacity"), 0)
            what = f"{refresh.what}; and {before} -> {after} always-on nodes"
            return Consequence(refresh.effect, what, refresh.seconds)
        return refresh
    pool = _subject(change.state)
    if changed & GROUP_SIZE:
        old = _int(change.old.inputs.get("desiredCapacity") if change.old else 0, 0)
        new = _int(change.state.inputs.get("desiredCapacity"), 0)
        if new >= old:
            text = f"{pool}: {old} -> {new} always-on nodes; the new ones boot and join"
        else:
            text = (
                f"{pool}: {old} -> {new} always-on nodes; {old - new} drained by the drain "
                "hook, each leaving once its jobs end"
            )
        return Consequence(Effect.LIVE, text)
    if changed <= TAG_INPUTS:
        return Consequence(Effect.NONE, f"{pool}: tags (new nodes carry them)")
    return Consequence(Effect.LIVE, f"{pool}: group settings ({', '.join(sorted(changed))})")


def _update(change: ResourceChange, context: Context) -> Consequence:
    state = change.state
    if state.type == GROUP:
        return _group_update(change, context)
    if state.type in NO_EFFECT_TYPES:
        return Consequence(Effect.NONE, f"{state.name}: new version (what uses it says more)")
    if change.changed <= TAG_INPUTS:
        return Consequence(Effect.NONE, f"{state.name}: tags")
    if state.type == INSTANCE and "instanceType" in change.changed:
        return head_restart(f"{state.name}: stopped and started to change its instance type")
    if state.type == DRAIN_HOOK:
        # The drain hook (terminations) or the join hook (launches): both updated in place.
        which = "join" if state.name.endswith("-join") else "drain"
        return Consequence(Effect.LIVE, f"{_subject(state)}: {which} hook settings")
    changed = ", ".join(sorted(change.changed))
    meaning = LIVE_MEANING.get(state.type, "updated in place")
    if state.type == ASSOCIATION and _targets_every_node(state):
        meaning = EVERY_NODE_PUSH
    return Consequence(Effect.LIVE, f"{state.name} ({changed}): {meaning}")


def _lost(state: ResourceState) -> str | None:
    if state.type == VOLUME and state.role != "head":
        return None
    return DATA_LOST.get(state.type)


def _replace(change: ResourceChange) -> Consequence:
    state = change.state
    order = "deleted before its replacement exists" if change.delete_first else "replaced"
    if state.type == GROUP:
        nodes = _int((change.old or state).inputs.get("desiredCapacity"), 0)
        return Consequence(
            Effect.DISRUPTIVE,
            f"{_subject(state)}: its Auto Scaling group is {order}: all {nodes} nodes "
            "terminated with their jobs",
        )
    lost = _lost(state)
    if lost is not None:
        guard = " (refused while storage.protect is on)" if state.protect else ""
        return Consequence(Effect.DISRUPTIVE, f"{state.name} {order}: {lost} lost{guard}")
    if state.type in REPLACE_DISRUPTS:
        return Consequence(Effect.DISRUPTIVE, f"{state.name}: {REPLACE_DISRUPTS[state.type]}")
    if state.type in REPLACE_RESTARTS_HEAD:
        return head_restart(f"{state.name}: {REPLACE_RESTARTS_HEAD[state.type]}")
    if state.type in NO_EFFECT_TYPES:
        return Consequence(Effect.NONE, f"{state.name}: rebuilt (what uses it says more)")
    steps = (
        "deleted, then made anew" if change.delete_first else "made anew, then the old one deleted"
    )
    return Consequence(Effect.LIVE, f"{state.name}: {steps}")


def _delete(change: ResourceChange) -> Consequence:
    state = change.state
    if state.type == GROUP:
        nodes = _int(state.inputs.get("desiredCapacity"), 0)
        return Consequence(
            Effect.DISRUPTIVE,
            f"{_subject(state)} removed: its {nodes} nodes terminated with their jobs (drain "
            "the partition first: the drain hook goes with the pool)",
        )
    lost = _lost(state)
    if lost is not None:
        if state.retain_on_delete:
            return Consequence(
                Effect.LIVE, f"{state.name}: removed from the stack, kept in AWS (retained)"
            )
        guard = " (refused while storage.protect is on)" if state.protect else ""
        return Consequence(Effect.DISRUPTIVE, f"{state.name} deleted: {lost} lost{guard}")
    if state.type == INSTANCE and state.name.endswith("-head-backup"):
        return Consequence(Effect.LIVE, f"{state.name} deleted: the backup controller goes")
    if state.type == INSTANCE:
        return Consequence(Effect.DISRUPTIVE, f"{state.name} deleted: the cluster has no head")
    if state.type == VOLUME_ATTACHMENT:
        # head_node.backup turned on: Slurm's state moves to EFS, and nothing copies it there.
        return Consequence(
            Effect.DISRUPTIVE,
            f"{state.name} deleted: the state volume leaves the running head (it stops first), "
            "and slurmctld starts over without its saved state: the queue and job records",
        )
    if state.type == PLACEMENT_GROUP:
        return Consequence(
            Effect.LIVE,
            f"{state.name}: deleted once no node runs in it (AWS refuses while the instance "
            "refresh is still moving nodes out: run `pulumi up` again when it is done)",
        )
    return Consequence(Effect.NONE, f"{state.name}: deleted")


def classify(change: ResourceChange, context: Context) -> Consequence:
    if change.action is Action.CREATE:
        state = change.state
        if state.type == GROUP:
            nodes = _int(state.inputs.get("desiredCapacity"), 0)
            return Consequence(
                Effect.LIVE, f"{_subject(state)} added: {nodes} always-on nodes boot and join"
            )
        if state.type in CREATE_LIVE:
            return Consequence(Effect.LIVE, f"{state.name}: {CREATE_LIVE[state.type]}")
        return Consequence(Effect.NONE, f"{state.name}: created")
    if change.action is Action.UPDATE:
        return _update(change, context)
    if change.action is Action.REPLACE:
        return _replace(change)
    return _delete(change)
