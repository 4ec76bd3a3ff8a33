"""The config store and its live update path to the head node (the node roles' policies are
checked in test_iam.py)."""

from __future__ import annotations

import hashlib
import json

import pytest

from slurmstack import render
from slurmstack.contract import AGENT_PATH
from slurmstack.stack.config_store import apply_config_commands
from support.stack import (
    T_ASSOCIATION,
    T_BUCKET,
    T_INSTANCE,
    T_OBJECT,
    T_PARAM,
    example,
    plan_of,
    run_ok,
)

pytestmark = pytest.mark.stack


def test_config_store_objects_manifest_and_association() -> None:
    definition = example("p5-training")
    plan = plan_of(definition)
    store = render.config_store(plan)
    result = run_ok(definition)
    bucket = result.one(T_BUCKET)
    # Not the image build bundles (tests/stack/test_images.py) nor the deployment's record
    # (tests/stack/test_change_preflight.py).
    objects = {
        o.inputs["key"]: o
        for o in result.of_type(T_OBJECT)
        if not o.inputs["key"].startswith(("images/", "slurmstack/deployed/"))
    }
    manifest_object = objects.pop(store.manifest_key)
    assert set(objects) == set(store.objects)
    for key, obj in objects.items():
        assert obj.inputs["content"] == store.objects[key]
        assert obj.inputs["bucket"] == bucket.id
        assert key == "config/" + hashlib.sha256(store.objects[key].encode()).hexdigest()
    manifest = store.manifest_json()
    (param,) = [p for p in result.of_type(T_PARAM) if p.inputs["name"].endswith("/config/manifest")]
    # The parameter names the manifest object, which names every file by its hash.
    assert param.inputs["value"] == store.manifest_key
    assert manifest_object.inputs["content"] == manifest
    assert store.manifest_key == "config/" + hashlib.sha256(manifest.encode()).hexdigest()
    # Uploaded only after every object it names, and published only after it is uploaded.
    assert {o.urn for o in objects.values()} <= set(manifest_object.options.depends_on)
    assert manifest_object.urn in param.options.depends_on
    apply_config = f"{plan.name}-apply-config"
    association = result.one(T_ASSOCIATION, apply_config)
    head = result.one(T_INSTANCE)
    assert association.inputs["targets"] == [{"key": "InstanceIds", "values": [head.id]}]
    assert association.inputs["parameters"] == {
        "ManifestHash": hashlib.sha256(manifest.encode()).hexdigest()
    }
    assert param.urn in association.options.depends_on
    document = result.one("aws:ssm/document:Document", apply_config)
    assert association.inputs["name"] == document.inputs["name"]
    content = json.loads(document.inputs["content"])
    commands = content["mainSteps"][0]["inputs"]["runCommand"]
    # The script (run for real in tests/unit/test_apply_config_document.py) syncs with the
    # agent, then reconfigures.
    assert commands == apply_config_commands()
    assert f"agent={AGENT_PATH}" in commands and 'if ! "$agent" sync-config; then' in commands
    assert 'until "$scontrol" reconfigure; do' in commands
    assert document.inputs["documentType"] == "Command"
