"""The plan's Slurm table on the console: the version, its source and support, and what a change
of slurm.version does, step by step (report.slurm builds the section this prints)."""

from __future__ import annotations

from typing import Any

from slurmstack.report.tables import Grid


def slurm_grid(doc: dict[str, Any]) -> Grid:
    s = doc["slurm"]
    support = (
        f"supported until {s['end_of_support']}"
        if s["supported"]
        else f"out of SchedMD's support since {s['end_of_support']}"
    )
    grid = Grid(
        f"Slurm {s['version']}: built from {s['source']['tag']} in every image, {support} "
        f"(as of {s['support_as_of']}); upgrades directly from "
        f"{', '.join(s['upgrades_directly_from'])}",
        ["a change of slurm.version", "where", "how", "paused meanwhile"],
    )
    for n, step in enumerate(s["upgrade_steps"], 1):
        grid.add(f"{n}. {step['daemon']}", step["where"], step["how"], step["paused"])
    grid.add("order", "", _slurm_order(s["order"]), "")
    return grid


def _slurm_order(order: list[dict[str, Any]]) -> str:
    """'head node (slurmdbd, slurmctld 26.05.5), then pool gpu (slurmd 26.05.5), ...'."""
    first, *pools = order
    text = f"{first['where']} ({', '.join(first['daemons'])} {first['version']})"
    if pools:
        parts = [
            f"{p['where']} ({', '.join(p['daemons'])} {p['version']}"
            f"{', lags the head' if p['lags_head'] else ''})"
            for p in pools
        ]
        text += ", then " + "; ".join(parts)
    return text
