"""Rules in slurmstack.checks.images: each case triggers exactly its rule."""

from __future__ import annotations

import copy

import pytest

from slurmstack import image_pins
from slurmstack.catalog import Architecture, load_catalog
from slurmstack.checks.images import _baked_architectures
from slurmstack.validate import validate_object
from support.checks import Case, check_case, definition, findings, set_in

CASES = [
    Case(
        "image-parent-unused",
        set_in("image", {"parents": {"neuron-x86-64": "ami-0123456789abcdef0"}}),
        "image.parents.neuron-x86-64",
        "the cluster bakes no neuron-x86-64 image (it bakes: cpu-x86-64, nvidia-x86-64)",
    ),
    # The definition is valid; slurmstack's own pins are not (UNPINNED below): an unrecorded
    # commit is refused before anything is made.
    Case(
        "image-downloads-pinned",
        set_in("image", {"version": 2}),
        "image",
        "efs_utils.git.commit: None is not a 40-digit git commit",
    ),
    Case(
        "image-build-instance-type",
        set_in("image", {"build_instance_type": "c7i.2xlarg"}),
        "image.build_instance_type",
        "unknown instance type 'c7i.2xlarg' (did you mean",
    ),
]


# Cases whose trigger is in slurmstack's image pins, not the definition.
UNPINNED = {"image-downloads-pinned": ("efs_utils", "git", "commit")}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    if case.id in UNPINNED:
        section, key, field = UNPINNED[case.id]
        pins = copy.deepcopy(image_pins.image_pins())
        pins[section][key][field] = None
        monkeypatch.setattr(image_pins, "image_pins", lambda: pins)
    check_case(case)


def test_a_known_build_type_of_the_right_architecture_passes() -> None:
    assert findings(definition(set_in("image", {"build_instance_type": "m7i.2xlarge"}))) == []


def test_architectures_baked_leave_out_nodes_with_their_own_image() -> None:
    """The catalog holds no arm64 type today, so the mixed-architecture finding is checked on
    the function that feeds it: nodes with an AMI of their own bake nothing."""
    data = definition()
    spec = validate_object(data, source="test").spec
    assert spec is not None
    assert _baked_architectures(spec, load_catalog()) == {Architecture.X86_64.value}
    data["image"] = {"ami": "ami-0123456789abcdef0"}
    spec = validate_object(data, source="test").spec
    assert spec is not None
    assert _baked_architectures(spec, load_catalog()) == set()
