"""The head node across its replacement and across changes of its user data: its address is a
network interface of its own, and new user data neither stops nor replaces a running head."""

from __future__ import annotations

import base64
import gzip
import hashlib
from typing import Any

import pytest

from slurmstack import render
from slurmstack.offline import OfflineRun, run_definition
from slurmstack.stack.head_node import USER_DATA_TAG
from support.stack import T_ENI, T_INSTANCE, T_PARAM, T_VOLUME, small_cluster

pytestmark = pytest.mark.stack


def head_address_parameter(result: OfflineRun) -> dict[str, Any]:
    (param,) = [r for r in result.of_type(T_PARAM) if r.inputs["name"].endswith("/head/address")]
    return param.inputs


def test_the_head_address_is_an_interface_that_outlives_the_instance() -> None:
    result = run_definition(small_cluster())
    assert result.error is None
    interface, head = result.one(T_ENI, "tiny-head"), result.one(T_INSTANCE)
    # The instance is launched with the interface as its primary one; the interface is not
    # deleted with the instance (no delete-on-termination), so a replacement gets it back.
    assert head.inputs["primaryNetworkInterface"] == {"networkInterfaceId": interface.id}
    assert not {"subnetId", "vpcSecurityGroupIds", "privateIp"} & set(head.inputs)
    assert interface.urn not in {r.parent for r in result.resources}  # nothing under it
    # One instance at a time holds the interface (and the state volume): the old head goes
    # first when it is replaced.
    assert head.options.delete_before_replace
    address = interface.outputs["privateIp"]
    assert head.outputs["privateIp"] == address
    assert head_address_parameter(result)["value"] == address
    assert result.outputs["head_private_ip"] == address
    assert interface.inputs["securityGroups"] == [
        result.one("aws:ec2/securityGroup:SecurityGroup", "tiny-head").id
    ]


def test_what_replaces_the_head_leaves_its_address_alone() -> None:
    """A new instance type or a pinned image change the instance; the interface, the address
    the nodes know and the state volume keep every input."""
    before = run_definition(small_cluster())
    changed = small_cluster()
    changed["head_node"] = {"instance_type": "m7i.4xlarge", "ami": "ami-0fedcba9876543210"}
    after = run_definition(changed)
    assert before.error is None and after.error is None
    assert before.one(T_INSTANCE).inputs != after.one(T_INSTANCE).inputs
    for kind in (T_ENI, T_VOLUME):
        assert before.one(kind).inputs == after.one(kind).inputs, kind
    assert head_address_parameter(before) == head_address_parameter(after)


def test_new_user_data_does_not_stop_the_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider applies changed user data by stopping and starting the instance, for a
    document cloud-init will not run again. It is ignored after creation; the tag with its
    sha256 changes in place and shows the head runs an older bootstrap."""
    definition = small_cluster()
    before = run_definition(definition)
    original = render.bootstrap_source
    monkeypatch.setattr(
        render.cloud_init, "bootstrap_source", lambda: original() + "# a new bootstrap\n"
    )
    after = run_definition(definition)
    old, new = before.one(T_INSTANCE), after.one(T_INSTANCE)
    assert old.inputs.keys() == new.inputs.keys()
    changed = {k for k in old.inputs if old.inputs[k] != new.inputs[k]}
    assert changed == {"userDataBase64", "tags"}
    assert "userDataBase64" in new.options.ignore_changes
    for head in (old, new):
        text = gzip.decompress(base64.b64decode(head.inputs["userDataBase64"]))
        assert head.inputs["tags"][USER_DATA_TAG] == hashlib.sha256(text).hexdigest()
    assert old.inputs["tags"][USER_DATA_TAG] != new.inputs["tags"][USER_DATA_TAG]
    # The way to pick up a new bootstrap on purpose: replace the head by its URN.
    assert before.outputs["head_node_urn"] == old.urn
