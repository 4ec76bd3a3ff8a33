"""Adding, resizing or removing a pool changes no input of the head node and no input of any
storage resource (two mocked runs compared resource by resource)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from slurmstack.offline import OfflineRun
from support.stack import (
    T_ASSOCIATION,
    T_BUCKET,
    T_DRA,
    T_EFS,
    T_INSTANCE,
    T_LUSTRE,
    T_MOUNT_TARGET,
    T_VOLUME,
    example,
    run_ok,
)

pytestmark = pytest.mark.stack

GUARDED = {
    T_INSTANCE,
    "aws:ec2/networkInterface:NetworkInterface",  # the head node's address
    T_VOLUME,
    "aws:ec2/volumeAttachment:VolumeAttachment",
    T_BUCKET,
    "aws:s3/bucketVersioning:BucketVersioning",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
    "aws:s3/bucketPolicy:BucketPolicy",
    T_LUSTRE,
    T_DRA,
    T_EFS,
    T_MOUNT_TARGET,
}


def guarded(result: OfflineRun) -> dict[str, tuple[dict[str, Any], Any]]:
    return {r.urn: (r.inputs, r.options) for r in result.resources if r.type in GUARDED}


def changed(definition: dict[str, Any], change: Any) -> dict[str, Any]:
    out = copy.deepcopy(definition)
    change(out)
    return out


def resize(d: dict[str, Any]) -> None:
    d["pools"][0]["count"] = 1
    d["pools"][1]["count"] = 40


def add_pool(d: dict[str, Any]) -> None:
    d["pools"].append({"name": "extra", "instance_type": "p5en.48xlarge", "count": 4})


def remove_pool(d: dict[str, Any]) -> None:
    del d["pools"][1]


@pytest.mark.parametrize("change", [resize, add_pool, remove_pool], ids=lambda f: f.__name__)
def test_pool_changes_leave_head_node_and_storage_alone(change: Any) -> None:
    before_def = example("p5-training")
    after_def = changed(before_def, change)
    before, after = run_ok(before_def), run_ok(after_def)
    old, new = guarded(before), guarded(after)
    types = {before.by_urn(urn).type for urn in old}
    assert {T_INSTANCE, T_VOLUME, T_BUCKET, T_LUSTRE, T_DRA, T_EFS} <= types
    assert old.keys() == new.keys()
    for urn in old:
        assert old[urn] == new[urn], f"{urn} changed"
    # The change itself did reach the cluster: through the config store and the groups.
    assert (
        before.one(T_ASSOCIATION, "llm-train-apply-config").inputs["parameters"]
        != after.one(T_ASSOCIATION, "llm-train-apply-config").inputs["parameters"]
    )
