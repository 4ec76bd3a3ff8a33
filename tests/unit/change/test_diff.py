"""The change model on small snapshots: force-new inputs, conditions, new ids flowing into
their users, delete-before-replace for fixed names, ignored inputs, and the classes."""

from __future__ import annotations

from slurmstack.change.diff import Action, diff
from slurmstack.change.effects import Context, Effect, classify
from slurmstack.change.replacement import load
from slurmstack.change.snapshot import ResourceState, Snapshot

VOLUME = "aws:ebs/volume:Volume"
ATTACHMENT = "aws:ec2/volumeAttachment:VolumeAttachment"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
GROUP = "aws:autoscaling/group:Group"
TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def state(urn: str, type_: str, inputs: dict, **options) -> ResourceState:  # type: ignore[no-untyped-def]
    return ResourceState(urn=urn, type=type_, name=urn, component="c", inputs=inputs, **options)


def snap(*states: ResourceState) -> Snapshot:
    return Snapshot("x", {s.urn: s for s in states})


def head_volume(size: int, az: str = "us-east-1a") -> ResourceState:
    tags = {"slurmstack:role": "head"}
    return state("vol", VOLUME, {"size": size, "availabilityZone": az, "tags": tags}, protect=True)


def attachment() -> ResourceState:
    return state(
        "att",
        ATTACHMENT,
        {"volumeId": "vol-1", "instanceId": "i-1", "deviceName": "/dev/sdf"},
        property_dependencies={"volumeId": ("vol",)},
    )


def test_growing_the_state_volume_is_an_update_in_place() -> None:
    changes = diff(
        snap(head_volume(100), attachment()), snap(head_volume(200), attachment()), load()
    )
    assert [(c.action, c.state.urn) for c in changes] == [(Action.UPDATE, "vol")]
    assert classify(changes[0], Context()).effect is Effect.LIVE


def test_a_replaced_volume_replaces_its_attachment_and_loses_the_state() -> None:
    old = snap(head_volume(100), attachment())
    new = snap(head_volume(100, az="us-east-1b"), attachment())
    changes = {c.state.urn: c for c in diff(old, new, load())}
    assert changes["vol"].action is Action.REPLACE
    assert changes["att"].action is Action.REPLACE  # volumeId: a new id, and force-new
    assert changes["att"].properties[0].computed_from == "vol"
    lost = classify(changes["vol"], Context())
    assert lost.effect is Effect.DISRUPTIVE and "state volume" in lost.what
    assert "refused while storage.protect is on" in lost.what
    assert classify(changes["att"], Context()).effect is Effect.HEAD_RESTART


def test_lustre_grows_in_place_and_is_replaced_when_it_shrinks() -> None:
    def fs(capacity: int) -> ResourceState:
        return state("fs", LUSTRE, {"storageCapacity": capacity, "deploymentType": "PERSISTENT_2"})

    grow = diff(snap(fs(2400)), snap(fs(4800)), load())
    shrink = diff(snap(fs(4800)), snap(fs(2400)), load())
    assert grow[0].action is Action.UPDATE
    assert shrink[0].action is Action.REPLACE
    assert "lowered" in (shrink[0].properties[0].replaces or "")


def test_a_group_with_a_fixed_name_is_deleted_before_its_replacement() -> None:
    def group(hooks: list) -> ResourceState:  # type: ignore[type-arg]
        return state(
            "g", GROUP, {"name": "x-pool-a", "desiredCapacity": 4, "initialLifecycleHooks": hooks}
        )

    changes = diff(snap(group([{"name": "h", "heartbeatTimeout": 600}])),
                   snap(group([{"name": "h", "heartbeatTimeout": 900}])), load())  # fmt: skip
    assert changes[0].action is Action.REPLACE and changes[0].delete_first
    consequence = classify(changes[0], Context())
    assert consequence.effect is Effect.DISRUPTIVE
    assert "all 4 nodes terminated" in consequence.what


def test_the_bridges_own_rules_decide_which_replacements_delete_first() -> None:
    """pulumi-aws's overrides (replacement.json): a mount target is always deleted first
    (one per zone); a database whose auto-named `identifier` the program gives is too,
    where a `name` check alone missed it; a group left to the auto-namer is not."""
    rds, efs = "aws:rds/instance:Instance", "aws:efs/mountTarget:MountTarget"

    def replaced(type_: str, old: dict, new: dict) -> bool:  # type: ignore[type-arg]
        (change,) = diff(snap(state("r", type_, old)), snap(state("r", type_, new)), load())
        assert change.action is Action.REPLACE
        return change.delete_first

    zone_a, zone_b = (
        {"fileSystemId": "fs-1", "subnetId": "a"},
        {"fileSystemId": "fs-1", "subnetId": "b"},
    )
    assert replaced(efs, zone_a, zone_b)
    db = {"identifier": "x-accounting", "engine": "mariadb", "kmsKeyId": "k1"}
    assert replaced(rds, db, {**db, "kmsKeyId": "k2"})
    auto = {"engine": "mariadb", "kmsKeyId": "k1"}
    assert not replaced(rds, auto, {**auto, "kmsKeyId": "k2"})
    hooks = {"desiredCapacity": 4, "initialLifecycleHooks": [{"name": "h"}]}
    assert not replaced(GROUP, hooks, {**hooks, "initialLifecycleHooks": [{"name": "i"}]})


def test_an_ignored_input_keeps_the_old_value() -> None:
    """Groups made with the hook inline keep it: the program ignores that input."""
    old = state("g", GROUP, {"name": "x-pool-a", "initialLifecycleHooks": [{"name": "h"}]})
    new = state("g", GROUP, {"name": "x-pool-a"}, ignore_changes=("initialLifecycleHooks",))
    assert diff(snap(old), snap(new), load()) == []


def test_a_new_template_version_rolls_the_group_batch_by_batch() -> None:
    def template(image: str) -> ResourceState:
        return state("lt", TEMPLATE, {"name": "x-pool-a", "imageId": image})

    group = state(
        "g", GROUP,
        {"name": "x-pool-a", "desiredCapacity": 16, "launchTemplate": {"id": "lt-1", "version": "1"},
         "instanceRefresh": {"preferences": {"minHealthyPercentage": 75, "instanceWarmup": "600"}},
         "tags": [{"key": "slurmstack:pool", "value": "a"}]},
        property_dependencies={"launchTemplate": ("lt",)},
    )  # fmt: skip
    changes = {
        c.state.urn: c
        for c in diff(snap(template("ami-1"), group), snap(template("ami-2"), group), load())
    }
    assert changes["lt"].action is Action.UPDATE and changes["g"].action is Action.UPDATE
    rolling = classify(changes["g"], Context(scale_in_wait_minutes=60))
    assert rolling.effect is Effect.ROLLING
    assert "16 nodes 4 at a time (4 batches)" in rolling.what
    assert rolling.seconds is not None
    low, high = rolling.seconds
    assert high - low == 4 * 60 * 60  # each batch may wait the full drain
