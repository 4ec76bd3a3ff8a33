"""A change plan: every resource change between two snapshots with its consequence, the
worst class, and the document `slurmstack plan --against --json` prints."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from slurmstack.change.diff import Action, ResourceChange, diff
from slurmstack.change.effects import Consequence, Context, Effect, classify
from slurmstack.change.replacement import ReplacementData, load
from slurmstack.change.snapshot import Snapshot


@dataclass(frozen=True)
class PlannedChange:
    change: ResourceChange
    consequence: Consequence

    def to_dict(self) -> dict[str, Any]:
        state = self.change.state
        return {
            "action": self.change.action.value,
            "type": state.type,
            "name": state.name,
            "urn": state.urn,
            "component": state.component,
            **self.consequence.to_dict(),
            "delete_before_replace": self.change.delete_first,
            "protected": state.protect,
            "properties": [p.to_dict() for p in self.change.properties],
        }


@dataclass(frozen=True)
class ChangePlan:
    against: str
    changes: tuple[PlannedChange, ...]

    @property
    def worst(self) -> Effect:
        effects = [c.consequence.effect for c in self.changes]
        return max(effects, key=lambda e: e.rank, default=Effect.NONE)

    def of_class(self, effect: Effect) -> list[PlannedChange]:
        return [c for c in self.changes if c.consequence.effect is effect]

    def reaches(self, effect: Effect) -> bool:
        return self.worst.rank >= effect.rank

    def counts(self) -> dict[str, int]:
        found = Counter(c.change.action.value for c in self.changes)
        return {a.value: found.get(a.value, 0) for a in Action}

    def to_dict(self) -> dict[str, Any]:
        by_class = Counter(c.consequence.effect.value for c in self.changes)
        ordered = sorted(
            self.changes,
            key=lambda c: (
                -c.consequence.effect.rank,
                c.change.state.component,
                c.change.state.urn,
            ),
        )
        return {
            "against": self.against,
            "class": self.worst.value,
            "summary": {
                **self.counts(),
                "by_class": {e.value: by_class.get(e.value, 0) for e in Effect},
            },
            "changes": [c.to_dict() for c in ordered],
        }


def change_plan(
    old: Snapshot,
    new: Snapshot,
    *,
    against: str,
    context: Context | None = None,
    data: ReplacementData | None = None,
) -> ChangePlan:
    context = context or Context()
    changes = diff(old, new, data or load())
    return ChangePlan(against, tuple(PlannedChange(c, classify(c, context)) for c in changes))
