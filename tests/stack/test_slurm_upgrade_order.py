"""Slurm's upgrade order in the stack (Pulumi mocks, preview=False, through the offline engine):
the head (slurmdbd, slurmctld) takes a new slurm.version before any pool's nodes, and nothing
lets a pool's slurmd run ahead of the head's slurmctld.

The change plans are `plan --against`'s (slurmstack.change), from two runs of the program."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from slurmstack.change.diff import Action
from slurmstack.change.effects import Effect
from slurmstack.change.plan import ChangePlan, change_plan
from slurmstack.change.snapshot import from_run
from support.stack import T_ASG, T_INSTANCE, T_LT, T_PARAM, run_ok, small_cluster

pytestmark = pytest.mark.stack

OLDER, NEWER = "24.11.5", "26.05.5"


def cluster(head: str, **pool: Any) -> dict[str, Any]:
    definition = small_cluster(**pool)
    definition["pools"].append({"name": "cpu", "instance_type": "c7i.2xlarge", "count": 2})
    definition["slurm"] = {"version": head, "accounting": {"enabled": True}}
    return definition


def changes(before: dict[str, Any], after: dict[str, Any]) -> ChangePlan:
    return change_plan(
        from_run(run_ok(before), before["name"]),
        from_run(run_ok(after), after["name"]),
        against="test",
    )


def test_the_head_boots_the_ami_of_its_slurm_release_not_an_ignored_input() -> None:
    result = run_ok(cluster(NEWER))
    head = result.one(T_INSTANCE)
    # An ignored ami would come back on a replacement too (the engine's processIgnoreChanges):
    # the head's AMI is held by a parameter of its release instead.
    assert "ami" not in head.options.ignore_changes
    (source,) = head.property_dependencies["ami"]
    holder = result.by_urn(source)
    assert holder.type == T_PARAM
    assert holder.inputs["name"] == "/slurmstack/tiny/head/ami/slurm-26.05.5"
    assert holder.options.ignore_changes == ("insecureValue",)
    assert head.inputs["ami"] == holder.inputs["insecureValue"]
    assert head.inputs["tags"]["slurmstack:slurm-version"] == NEWER


def test_every_pool_template_waits_for_the_head() -> None:
    result = run_ok(cluster(NEWER))
    head = result.one(T_INSTANCE)
    templates = result.of_type(T_LT)
    assert len(templates) == 2
    for template in templates:
        assert head.urn in template.options.depends_on, template.name
        assert template.inputs["tags"]["slurmstack:slurm-version"] == NEWER


def test_a_new_slurm_version_replaces_the_head_then_rolls_the_pools() -> None:
    plan = changes(cluster(OLDER), cluster(NEWER))
    head = [c for c in plan.changes if c.change.state.type == T_INSTANCE]
    assert [(c.change.action, c.change.delete_first) for c in head] == [(Action.REPLACE, True)]
    assert head[0].consequence.effect is Effect.HEAD_RESTART
    ami = next(p for p in head[0].change.properties if p.path == "ami")
    assert ami.replaces and ami.computed_from == "tiny-head-ami-slurm-26-05-5"
    groups = {c.change.state.name: c.consequence.effect for c in plan.changes}
    assert groups["tiny-pool-gpu"] is Effect.ROLLING
    assert groups["tiny-pool-cpu"] is Effect.ROLLING
    assert plan.worst is Effect.HEAD_RESTART
    # The new release's parameter is made, the old one's goes.
    params = {
        c.change.state.name: c.change.action
        for c in plan.changes
        if c.change.state.name.startswith("tiny-head-ami-slurm")
    }
    assert params == {
        "tiny-head-ami-slurm-26-05-5": Action.CREATE,
        "tiny-head-ami-slurm-24-11-5": Action.DELETE,
    }


def test_a_new_image_of_the_same_release_leaves_the_head_alone() -> None:
    """New pins or image.version: the pools roll, the running head keeps its AMI."""
    before = cluster(NEWER)
    after = copy.deepcopy(before)
    after["image"] = {"version": 2}
    plan = changes(before, after)
    touched = {c.change.state.name: c.consequence.effect for c in plan.changes}
    assert touched["tiny-pool-gpu"] is Effect.ROLLING
    assert "tiny-head" not in touched
    assert plan.worst is Effect.ROLLING


def test_a_pool_lagging_the_head_gets_an_image_of_its_own_release() -> None:
    """A staged upgrade: the head on 26.05.5, one pool still on 24.11.5."""
    result = run_ok(cluster(NEWER, slurm_version=OLDER))
    templates = {t.name: t for t in result.of_type(T_LT)}
    assert templates["tiny-pool-gpu"].inputs["tags"]["slurmstack:slurm-version"] == OLDER
    assert templates["tiny-pool-cpu"].inputs["tags"]["slurmstack:slurm-version"] == NEWER
    (image,) = templates["tiny-pool-gpu"].property_dependencies["imageId"]
    assert result.by_urn(image).name == "tiny-image-nvidia-x86-64-slurm-24-11-5"
    # Then the pool follows: only its group rolls, the head stays.
    plan = changes(cluster(NEWER, slurm_version=OLDER), cluster(NEWER))
    rolled = [c.change.state.name for c in plan.changes if c.change.state.type == T_ASG]
    assert rolled == ["tiny-pool-gpu"]
    assert all(c.change.state.type != T_INSTANCE for c in plan.changes)


def test_plan_json_names_the_order() -> None:
    from slurmstack.plan import build_plan
    from slurmstack.report.slurm import slurm_section
    from slurmstack.validate import validate_object

    spec = validate_object(cluster(NEWER, slurm_version=OLDER)).spec
    assert spec is not None
    order = slurm_section(build_plan(spec))["order"]
    assert order[0] == {
        "step": 1,
        "where": "head node",
        "daemons": ["slurmdbd", "slurmctld"],
        "version": NEWER,
        "lags_head": False,
    }
    assert [(o["step"], o["where"], o["version"], o["lags_head"]) for o in order[1:]] == [
        (2, "pool gpu", OLDER, True),
        (2, "pool cpu", NEWER, False),
    ]


def test_login_pools_wait_for_the_head_and_boot_its_release() -> None:
    """Clients come last in Slurm's order: a login pool's template waits for the head, as the
    pools' do, and its nodes boot the image of the head's release."""
    definition = cluster(NEWER)
    definition["groups"] = [{"name": "research", "gid": 3000}]
    definition["users"] = [{"name": "alice", "uid": 2001, "group": "research"}]
    definition["login_pools"] = [{"name": "login", "instance_type": "m7i.2xlarge", "count": 1}]
    result = run_ok(definition)
    head = result.one(T_INSTANCE)
    (login,) = [t for t in result.of_type(T_LT) if t.name == "tiny-login-login"]
    assert head.urn in login.options.depends_on
    assert login.inputs["tags"]["slurmstack:slurm-version"] == NEWER
