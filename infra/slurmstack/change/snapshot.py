"""What a deployment is made of, as the change plan compares it: each provider resource's
URN, type, inputs, resource options and which resources feed which of its inputs.

A snapshot comes from an offline run of the program (``from_run``) or from a saved
``slurmstack plan --json`` (``from_document``), whose ``resources`` carry the same fields
(``document_fields``). Long strings (user data, policies, config files) are kept as their
digest, and secret inputs as ``[secret]``, in both, so the two compare alike.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from slurmstack.contract import POOL_TAG, ROLE_TAG
from slurmstack.offline.record import OfflineRun, RecordedResource, redact

# Longer strings are compared (and shown) by digest: a saved plan stays small and readable.
LONG_STRING = 240
STACK_TYPE = "pulumi:pulumi:Stack"


def compact(value: Any) -> Any:
    if isinstance(value, str) and len(value) > LONG_STRING:
        digest = hashlib.sha256(value.encode()).hexdigest()[:16]
        return f"<{len(value)} characters, sha256 {digest}>"
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [compact(v) for v in value]
    return value


def _tags(inputs: dict[str, Any]) -> dict[str, str]:
    """A resource's tags: a map, or (an Auto Scaling group's) a list of key/value entries."""
    tags = inputs.get("tags")
    if isinstance(tags, dict):
        return {str(k): str(v) for k, v in tags.items()}
    if isinstance(tags, list):
        return {str(t.get("key")): str(t.get("value")) for t in tags if isinstance(t, dict)}
    return {}


@dataclass(frozen=True)
class ResourceState:
    urn: str
    type: str
    name: str
    component: str
    inputs: dict[str, Any]
    protect: bool = False
    retain_on_delete: bool = False
    delete_before_replace: bool = False
    ignore_changes: tuple[str, ...] = ()
    replace_on_changes: tuple[str, ...] = ()
    # Input name -> URNs of the resources whose outputs it is made from.
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def role(self) -> str | None:
        return _tags(self.inputs).get(ROLE_TAG)

    @property
    def pool(self) -> str | None:
        return _tags(self.inputs).get(POOL_TAG)


@dataclass(frozen=True)
class Snapshot:
    cluster: str
    resources: dict[str, ResourceState]  # by URN

    def of_type(self, type_: str) -> list[ResourceState]:
        return [r for r in self.resources.values() if r.type == type_]


def document_fields(resource: RecordedResource) -> dict[str, Any]:
    """The fields a saved plan keeps per provider resource (added to ``resources[]``)."""
    return {
        "urn": resource.urn,
        "inputs": compact(redact(resource.inputs, resource.secret_inputs)),
        "delete_before_replace": resource.options.delete_before_replace,
        "ignore_changes": list(resource.options.ignore_changes),
        "replace_on_changes": list(resource.options.replace_on_changes),
        # Sorted: a protobuf map's order varies from process to process.
        "property_dependencies": {
            k: sorted(v) for k, v in sorted(resource.property_dependencies.items())
        },
    }


def _component(run: OfflineRun, resource: RecordedResource) -> str:
    found = run.component_of(resource)
    return found.name if found is not None else "(stack)"


def from_run(run: OfflineRun, cluster: str) -> Snapshot:
    states = {}
    for r in run.custom:
        fields = document_fields(r)
        states[r.urn] = ResourceState(
            urn=r.urn,
            type=r.type,
            name=r.name,
            component=_component(run, r),
            inputs=fields["inputs"],
            protect=r.options.protect,
            retain_on_delete=r.options.retain_on_delete,
            delete_before_replace=r.options.delete_before_replace,
            ignore_changes=r.options.ignore_changes,
            replace_on_changes=r.options.replace_on_changes,
            property_dependencies=dict(r.property_dependencies),
        )
    return Snapshot(cluster=cluster, resources=states)


class NotASavedPlan(ValueError):
    """A JSON document that is not the output of `slurmstack plan --json` (or one written
    before plans kept their resources' inputs)."""


def is_saved_plan(document: Any) -> bool:
    return isinstance(document, dict) and isinstance(document.get("resources"), list)


def from_document(document: dict[str, Any]) -> Snapshot:
    if not is_saved_plan(document):
        raise NotASavedPlan("no 'resources' list: not the output of `slurmstack plan --json`")
    states = {}
    for entry in document["resources"]:
        if entry.get("kind") != "resource":
            continue
        if "inputs" not in entry or "urn" not in entry:
            raise NotASavedPlan(
                f"resource {entry.get('name')!r} has no inputs: the plan was saved by a "
                "slurmstack that did not keep them; save it again with this version"
            )
        states[entry["urn"]] = ResourceState(
            urn=entry["urn"],
            type=entry["type"],
            name=entry["name"],
            component=entry.get("component", "(stack)"),
            inputs=dict(entry["inputs"]),
            protect=bool(entry.get("protect")),
            retain_on_delete=bool(entry.get("retain_on_delete")),
            delete_before_replace=bool(entry.get("delete_before_replace")),
            ignore_changes=tuple(entry.get("ignore_changes", ())),
            replace_on_changes=tuple(entry.get("replace_on_changes", ())),
            property_dependencies={
                k: tuple(v) for k, v in entry.get("property_dependencies", {}).items()
            },
        )
    return Snapshot(cluster=str(document.get("cluster", "")), resources=states)
