"""The provider's own replacement rules (``replacement.json``): which input changes make it
replace a resource instead of updating it in place, per resource type, by Pulumi input name.

The data file is written by ``tools/refresh_replacement_data.py`` from the sources of the
Terraform AWS provider that the locked pulumi-aws bridges; this module only reads it. A
rule's path is dotted (``rootBlockDevice.encrypted``); list positions in a changed path are
skipped when matching, so a rule on a block's field matches that field in every element.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

DATA_FILE = "replacement.json"
DECREASE = "decrease"

Path = tuple[str | int, ...]


def split_path(text: str) -> tuple[str, ...]:
    return tuple(text.split("."))


def _names_only(path: Path) -> tuple[str, ...]:
    return tuple(str(p) for p in path if not isinstance(p, int))


def _covers(rule: tuple[str, ...], changed: tuple[str, ...]) -> bool:
    """A rule covers a change below it, and a change of a whole block that holds it."""
    shorter = min(len(rule), len(changed))
    return rule[:shorter] == changed[:shorter]


def _lower(old: Any, new: Any) -> bool:
    """True when ``new`` is below ``old``: numbers, or dotted versions such as '2.12'."""
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return new < old
    try:
        return tuple(int(p) for p in str(new).split(".")) < tuple(
            int(p) for p in str(old).split(".")
        )
    except ValueError:
        return False


@dataclass(frozen=True)
class TypeRules:
    """One resource type's rules, as the data file gives them."""

    type: str
    terraform: str
    replace: tuple[tuple[str, ...], ...]
    replace_when: dict[tuple[str, ...], tuple[str, ...]]
    update: tuple[str, ...]
    restarts: tuple[str, ...] = ()
    new_outputs_on_update: tuple[str, ...] = ()
    source: dict[str, Any] = field(default_factory=dict)
    # Inputs the source read does not declare (it predates them), classified as the
    # provider documents them; and inputs left unclassified for the same reason.
    documented: tuple[str, ...] = ()
    unclassified: tuple[str, ...] = ()
    # The bridge's own rules (pulumi-aws's resource overrides): the type is always deleted
    # before its replacement is created; and its auto-named inputs, which, given
    # explicitly, make a replacement delete first too (the new one could not take the name).
    delete_before_replace: bool = False
    auto_named: tuple[str, ...] = ()

    @property
    def known_inputs(self) -> set[str]:
        """Top-level inputs the data classifies (replaced or updated in place)."""
        names = {r[0] for r in self.replace} | {r[0] for r in self.replace_when}
        return names | set(self.update)

    def replacement_reason(
        self, path: Path, old: Any, new: Any, inputs: dict[str, Any]
    ) -> str | None:
        """Why a change at ``path`` (old -> new) replaces the resource, or None."""
        changed = _names_only(path)
        for rule in self.replace:
            if _covers(rule, changed):
                return f"{'.'.join(rule)} is force-new ({self.terraform})"
        for rule, conditions in self.replace_when.items():
            if not _covers(rule, changed):
                continue
            for condition in conditions:
                if condition == DECREASE and _lower(old, new):
                    return f"{'.'.join(rule)} lowered ({self.terraform} replaces on a decrease)"
                if "=" in condition:
                    key, value = condition.split("=", 1)
                    if str(inputs.get(key)) == value:
                        return f"{'.'.join(rule)} changed while {key} is {value} ({self.terraform})"
        return None


@dataclass(frozen=True)
class ReplacementData:
    pulumi_aws: str
    pulumi_random: str
    types: dict[str, TypeRules]

    def rules(self, type_: str) -> TypeRules | None:
        return self.types.get(type_)


def _type_rules(type_: str, raw: dict[str, Any]) -> TypeRules:
    return TypeRules(
        type=type_,
        terraform=str(raw["terraform"]),
        replace=tuple(split_path(p) for p in raw.get("replace", ())),
        replace_when={split_path(k): tuple(v) for k, v in raw.get("replace_when", {}).items()},
        update=tuple(raw.get("update", ())),
        restarts=tuple(raw.get("restarts", ())),
        new_outputs_on_update=tuple(raw.get("new_outputs_on_update", ())),
        source=dict(raw.get("source", {})),
        documented=tuple(raw.get("documented", ())),
        unclassified=tuple(raw.get("unclassified", ())),
        delete_before_replace=bool(raw.get("delete_before_replace", False)),
        auto_named=tuple(raw.get("auto_named", ())),
    )


def parse(document: dict[str, Any]) -> ReplacementData:
    return ReplacementData(
        pulumi_aws=str(document["pulumi_aws"]),
        pulumi_random=str(document["pulumi_random"]),
        types={t: _type_rules(t, raw) for t, raw in document["types"].items()},
    )


@cache
def load() -> ReplacementData:
    text = resources.files("slurmstack.change").joinpath(DATA_FILE).read_text()
    return parse(json.loads(text))
