"""What one offline run of the Pulumi program registered: resources with their inputs,
outputs and options, the stack's outputs, invokes and logs.

Pure data (no Pulumi import): the report and the tests read runs through these types, and
only the engine (``slurmstack.offline.engine``) talks to Pulumi's runtime.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Options:
    """The resource options the engine saw for one resource."""

    protect: bool = False
    retain_on_delete: bool = False
    delete_before_replace: bool = False
    ignore_changes: tuple[str, ...] = ()
    replace_on_changes: tuple[str, ...] = ()
    additional_secret_outputs: tuple[str, ...] = ()
    # URNs the resource depends on: explicitly (depends_on, expanded over components'
    # children) and in total (also through its inputs).
    depends_on: tuple[str, ...] = ()
    dependencies: tuple[str, ...] = ()
    create_timeout: str = ""  # custom_timeouts' create ("" when not set), e.g. "175m"


@dataclass(frozen=True)
class RecordedResource:
    type: str
    name: str
    urn: str
    parent: str | None
    custom: bool
    id: str | None
    inputs: dict[str, Any]  # wire names (camelCase), secrets unwrapped
    outputs: dict[str, Any]
    options: Options
    secret_inputs: tuple[str, ...] = ()  # dotted paths of inputs that were marked secret
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def is_component(self) -> bool:
        return not self.custom

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "name": self.name,
            "urn": self.urn,
            "parent": self.parent,
            "custom": self.custom,
            "id": self.id,
            "inputs": redact(self.inputs, self.secret_inputs),
            "options": {
                "protect": self.options.protect,
                "retain_on_delete": self.options.retain_on_delete,
                "delete_before_replace": self.options.delete_before_replace,
                "ignore_changes": list(self.options.ignore_changes),
                "depends_on": list(self.options.depends_on),
            },
        }


@dataclass
class OfflineRun:
    """Everything one offline run of the program registered, exported, called and logged."""

    resources: list[RecordedResource]
    outputs: dict[str, Any]
    secret_outputs: tuple[str, ...]
    invokes: list[tuple[str, dict[str, Any]]]
    new_resource_calls: int
    logs: list[tuple[str, str]]
    error: BaseException | None
    stack_urn: str | None = None
    # (type, logical name, id) of each resource the program read with ``get`` (it exists
    # outside the stack: never created, updated or deleted by it)
    reads: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error

    @property
    def custom(self) -> list[RecordedResource]:
        """Provider resources (what `pulumi up` creates in the cloud), not components."""
        return [r for r in self.resources if r.custom]

    def count_by_type(self, *, custom_only: bool = True) -> Counter[str]:
        chosen = self.custom if custom_only else self.resources
        return Counter(r.type for r in chosen)

    def of_type(self, type_: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str, name: str | None = None) -> RecordedResource:
        found = [r for r in self.of_type(type_) if name is None or r.name == name]
        if len(found) != 1:
            raise LookupError(f"expected one {type_} {name or ''}, found {len(found)}")
        return found[0]

    def by_urn(self, urn: str) -> RecordedResource:
        for resource in self.resources:
            if resource.urn == urn:
                return resource
        raise KeyError(urn)

    def children(self, urn: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.parent == urn]

    def descendants(self, urn: str) -> Iterator[RecordedResource]:
        for child in self.children(urn):
            yield child
            yield from self.descendants(child.urn)

    def component_of(self, resource: RecordedResource) -> RecordedResource | None:
        """The nearest enclosing component (None at the stack's top level)."""
        parent = resource.parent
        while parent is not None and parent != self.stack_urn:
            found = self.by_urn(parent)
            if not found.custom:
                return found
            parent = found.parent
        return None

    def error_lines(self) -> list[str]:
        if self.error is None:
            return []
        return [line for line in str(self.error).splitlines() if line.strip()]

    def to_dict(self) -> dict[str, Any]:
        return {
            "resources": [r.to_dict() for r in self.resources],
            "outputs": redact(self.outputs, self.secret_outputs),
            "error": str(self.error) if self.error is not None else None,
        }


def redact(value: dict[str, Any], secret_paths: tuple[str, ...]) -> dict[str, Any]:
    """A copy with every top-level secret value replaced by ``[secret]``."""
    tops = {path.split(".", 1)[0].split("[", 1)[0] for path in secret_paths}
    return {key: ("[secret]" if key in tops else item) for key, item in value.items()}
