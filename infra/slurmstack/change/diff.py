"""Compare two snapshots the way the engine and the provider would: which resources are
created, updated in place, replaced or deleted, and which input changes cause it.

Values the offline engine cannot know are modelled, not ignored: a replaced resource gets a
new id, so every input made from it changes too (and replaces its user where that input is
force-new: a new state volume needs a new attachment); an updated launch template gets a
new version, so the groups launched from it change (and refresh their instances). Inputs a
resource ignores (``ignore_changes``) keep their old value, as the engine keeps it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from slurmstack.change.replacement import Path, ReplacementData, TypeRules
from slurmstack.change.snapshot import ResourceState, Snapshot


class Action(enum.StrEnum):
    CREATE = "create"
    UPDATE = "update"
    REPLACE = "replace"
    DELETE = "delete"


MISSING = object()
TAGS = {"tags", "tagsAll"}


@dataclass(frozen=True)
class PropertyChange:
    path: str
    old: Any
    new: Any
    replaces: str | None = None  # why this change replaces the resource
    computed_from: str | None = None  # the resource whose new output changes it

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "old": None if self.old is MISSING else self.old,
            "new": None if self.new is MISSING else self.new,
            "replaces": self.replaces,
            "computed_from": self.computed_from,
        }


@dataclass(frozen=True)
class ResourceChange:
    action: Action
    old: ResourceState | None
    new: ResourceState | None
    properties: tuple[PropertyChange, ...] = ()
    delete_first: bool = False  # replaced by deleting the old one before creating the new

    @property
    def state(self) -> ResourceState:
        found = self.new or self.old
        assert found is not None
        return found

    @property
    def changed(self) -> set[str]:
        return {p.path.split(".", 1)[0].split("[", 1)[0] for p in self.properties}


def _join(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def value_changes(old: Any, new: Any, path: Path = ()) -> Iterator[tuple[Path, Any, Any]]:
    """Leaf-level differences: (path, old, new); a missing side is MISSING."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            yield from value_changes(old.get(key, MISSING), new.get(key, MISSING), (*path, key))
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from value_changes(a, b, (*path, index))
        return
    if old != new:
        yield path, old, new


def _ignored(path: Path, ignore: tuple[str, ...]) -> bool:
    text = _join(path)
    return any(text == i or text.startswith(i + ".") or text.startswith(i + "[") for i in ignore)


def _dependency_order(snapshot: Snapshot) -> list[ResourceState]:
    """Resources after every resource their inputs come from (then by URN)."""
    states = snapshot.resources
    done: set[str] = set()
    ordered: list[ResourceState] = []

    def visit(urn: str, trail: frozenset[str]) -> None:
        if urn in done or urn not in states or urn in trail:
            return
        for deps in states[urn].property_dependencies.values():
            for dep in deps:
                visit(dep, trail | {urn})
        done.add(urn)
        ordered.append(states[urn])

    for urn in sorted(states):
        visit(urn, frozenset())
    return ordered


def _deleted_first(state: ResourceState, rules: TypeRules | None) -> bool:
    """Whether a replacement deletes the old resource before creating the new one: the
    resource's own option, the bridge's DeleteBeforeReplace for its type, or an auto-named
    input given explicitly (the bridge's nameRequiresDeleteBeforeReplace; see
    replacement.json, delete_before_replace). A type the data lacks falls back to `name`."""
    if state.delete_before_replace or (rules is not None and rules.delete_before_replace):
        return True
    if rules is not None:
        named: tuple[str, ...] = rules.auto_named
    else:
        named = ("name",) if state.type.startswith("aws:") else ()
    return any(isinstance(state.inputs.get(n), str) for n in named)


def diff(old: Snapshot, new: Snapshot, data: ReplacementData) -> list[ResourceChange]:
    changes: list[ResourceChange] = []
    replaced: dict[str, str] = {}  # URN -> name, for the inputs made from them
    reversioned: dict[str, str] = {}
    for state in _dependency_order(new):
        before = old.resources.get(state.urn)
        if before is None:
            changes.append(ResourceChange(Action.CREATE, None, state))
            continue
        rules = data.rules(state.type)
        properties: list[PropertyChange] = []
        for path, a, b in value_changes(before.inputs, state.inputs):
            if _ignored(path, state.ignore_changes):
                continue
            reason = rules.replacement_reason(path, a, b, state.inputs) if rules else None
            if reason is None and str(path[0]) in state.replace_on_changes:
                reason = f"{path[0]} is in the resource's replace_on_changes"
            properties.append(PropertyChange(_join(path), a, b, reason))
        seen = {p.path.split(".", 1)[0].split("[", 1)[0] for p in properties}
        for key, deps in sorted(state.property_dependencies.items()):
            if key in seen or key in state.ignore_changes:
                continue
            source = next((replaced[d] for d in deps if d in replaced), None)
            kind = "new id"
            if source is None:
                source = next((reversioned[d] for d in deps if d in reversioned), None)
                kind = "new version"
            if source is None:
                continue
            value = state.inputs.get(key)
            reason = None
            if rules is not None and kind == "new id":
                reason = rules.replacement_reason((key,), value, None, state.inputs)
            properties.append(
                PropertyChange(key, value, f"({kind} of {source})", reason, computed_from=source)
            )
        if not properties:
            continue
        if any(p.replaces for p in properties):
            first = _deleted_first(state, rules)
            changes.append(ResourceChange(Action.REPLACE, before, state, tuple(properties), first))
            replaced[state.urn] = state.name
        else:
            change = ResourceChange(Action.UPDATE, before, state, tuple(properties))
            changes.append(change)
            # A tag change leaves a template's or a document's version as it is.
            if rules is not None and rules.new_outputs_on_update and change.changed - TAGS:
                reversioned[state.urn] = state.name
    for urn in sorted(set(old.resources) - set(new.resources)):
        changes.append(ResourceChange(Action.DELETE, old.resources[urn], None))
    return changes
