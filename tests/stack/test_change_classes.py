"""`plan --against` on the real program: every field of the definition changed once (the
table in tests/change_mutations.py) gets its class, and no ordinary change replaces or
deletes a pool's group, a file system or the head's state volume."""

from __future__ import annotations

import json
from typing import Any

import pytest

from change_mutations import BASE, MUTATIONS, Mutation
from slurmstack.change.diff import Action
from slurmstack.change.effects import Effect
from slurmstack.change.plan import ChangePlan, change_plan
from slurmstack.change.replacement import load
from slurmstack.change.snapshot import Snapshot, from_run
from support.stack import run_ok

pytestmark = pytest.mark.stack

GROUP = "aws:autoscaling/group:Group"
HOOK = "aws:autoscaling/lifecycleHook:LifecycleHook"
KEPT = {
    GROUP,
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    "aws:efs/fileSystem:FileSystem",
    "aws:ebs/volume:Volume",
    "aws:s3/bucket:Bucket",
}

_SNAPSHOTS: dict[str, Snapshot] = {}


def snapshot(definition: dict[str, Any]) -> Snapshot:
    key = json.dumps(definition, sort_keys=True)
    if key not in _SNAPSHOTS:
        _SNAPSHOTS[key] = from_run(run_ok(definition), definition["name"])
    return _SNAPSHOTS[key]


def planned(mutation: Mutation) -> ChangePlan:
    before, after = mutation.pair()
    return change_plan(snapshot(before), snapshot(after), against=mutation.field)


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.field for m in MUTATIONS])
def test_each_field_change_gets_its_class(mutation: Mutation) -> None:
    plan = planned(mutation)
    worst = [
        f"{c.change.action} {c.change.state.name}: {c.consequence.what}"
        for c in plan.of_class(plan.worst)
    ]
    assert plan.worst.value == mutation.expected, worst
    if mutation.ordinary:
        touched = [
            c.change.state.name
            for c in plan.changes
            if c.change.state.type in KEPT and c.change.action in (Action.REPLACE, Action.DELETE)
        ]
        assert touched == [], f"an ordinary change replaces or deletes {touched}"


def _mutation(field: str, why: str = "") -> Mutation:
    return next(m for m in MUTATIONS if m.field == field and (not why or m.why == why))


@pytest.mark.parametrize(
    "why", ["a new user", "a removed user: locked on every node, files and id kept"]
)
def test_a_user_added_or_removed_is_pushed_to_every_node_without_reboot(why: str) -> None:
    plan = planned(_mutation("users.name", why))
    assert plan.worst is Effect.LIVE
    pushes = [c.consequence.what for c in plan.of_class(Effect.LIVE)]
    assert any("every node" in what and "no reboot" in what for what in pushes), pushes
    touched = {c.change.state.type for c in plan.changes if c.change.action is not Action.UPDATE}
    assert touched <= {"aws:s3/bucketObjectv2:BucketObjectv2"}, touched


@pytest.mark.parametrize("field", ["login_pools.ami", "login_pools.instance_type"])
def test_a_login_pools_image_or_size_rolls_that_pool_only(field: str) -> None:
    plan = planned(_mutation(field))
    rolled = [c.change.state.name for c in plan.of_class(Effect.ROLLING)]
    assert rolled == ["chg-login-login"]
    groups = [c.change.state.name for c in plan.changes if c.change.state.type == GROUP]
    assert groups == ["chg-login-login"], "a worker pool's group changes too"


def test_every_input_the_program_sets_is_in_the_replacement_data() -> None:
    """A new input (or resource type) in the stack needs its provider rule: without one a
    force-new change would pass as an update."""
    data = load()
    missing = set()
    for definition in [BASE, *(m.pair()[1] for m in MUTATIONS)]:
        for state in snapshot(definition).resources.values():
            rules = data.rules(state.type)
            if rules is None:
                missing.add(state.type)
                continue
            missing |= {f"{state.type}.{k}" for k in set(state.inputs) - rules.known_inputs}
    assert missing == set()


def test_changing_the_drain_hook_never_replaces_a_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trap the review found: the drain hook was an initial_lifecycle_hooks block,
    force-new on a group with a fixed name, so a new heartbeat would have terminated every
    node of every pool. Now the hook is its own resource, updated in place."""
    from slurmstack.stack import worker_pool

    before = snapshot(BASE)
    monkeypatch.setattr(worker_pool, "DRAIN_HOOK_HEARTBEAT_SECONDS", 900)
    after = from_run(run_ok_uncached(BASE), BASE["name"])
    plan = change_plan(before, after, against="the old heartbeat")
    assert {(c.change.action, c.change.state.type) for c in plan.changes} == {(Action.UPDATE, HOOK)}
    assert plan.worst is Effect.LIVE


def run_ok_uncached(definition: dict[str, Any]):  # type: ignore[no-untyped-def]
    from slurmstack.offline import run_definition

    run = run_definition(definition)
    assert run.ok, run.error
    return run


def test_groups_made_with_the_hook_inline_are_not_replaced() -> None:
    """A stack deployed before the hook was its own resource has it in the group's inputs:
    the group ignores that input, so the first `pulumi up` after the upgrade keeps it."""
    new = snapshot(BASE)
    old_states = dict(new.resources)
    for urn, state in new.resources.items():
        if state.type == GROUP:
            inputs = {**state.inputs, "initialLifecycleHooks": [{"name": "slurmstack-drain"}]}
            old_states[urn] = type(state)(**{**state.__dict__, "inputs": inputs})
        if state.type == HOOK:
            del old_states[urn]
    plan = change_plan(Snapshot(new.cluster, old_states), new, against="the inline hook")
    assert {(c.change.action, c.change.state.type) for c in plan.changes} == {(Action.CREATE, HOOK)}
