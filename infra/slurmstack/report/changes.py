"""Print a change plan (`slurmstack plan FILE --against OLD`): one line per change that
reaches the running cluster, worst first, and a count of the rest."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from slurmstack.change.effects import EFFECT_LABELS, Effect
from slurmstack.report.tables import Grid, print_grid


def change_grid(document: dict[str, Any]) -> Grid:
    grid = Grid(f"Changes against {document['against']}", ["class", "action", "resource", "effect"])
    for change in document["changes"]:
        effect = Effect(change["class"])
        if effect is Effect.NONE:
            continue
        action = change["action"]
        if change["delete_before_replace"] and action == "replace":
            action = "replace (delete first)"
        grid.add(
            EFFECT_LABELS[effect],
            action,
            f"{change['type'].split(':')[-1]} {change['name']}",
            change["effect"],
            bold=effect is Effect.DISRUPTIVE,
        )
    return grid


def summary_line(document: dict[str, Any]) -> str:
    summary = document["summary"]
    actions = ", ".join(
        f"{summary[a]} {a}d" if a != "update" else f"{summary[a]} updated"
        for a in ("create", "update", "replace", "delete")
    )
    quiet = summary["by_class"][Effect.NONE.value]
    worst = EFFECT_LABELS[Effect(document["class"])]
    return f"{actions}; {quiet} with no effect on the running cluster. Worst: {worst}."


def print_changes(document: dict[str, Any], console: Console) -> None:
    if not document["changes"]:
        console.print(f"No changes against {document['against']}.")
        return
    grid = change_grid(document)
    if grid.rows:
        print_grid(grid, console)
    console.print(summary_line(document), soft_wrap=True, markup=False, highlight=False)
