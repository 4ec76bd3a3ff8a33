"""The plan's head-failure table on the console: each configuration, what it recovers from by
itself and in how long (report.head_failure builds the section this prints)."""

from __future__ import annotations

from typing import Any

from slurmstack.report.tables import Grid


def head_failure_grid(doc: dict[str, Any]) -> Grid:
    h = doc["head_failure"]
    grid = Grid(
        f"When the head node fails: {h['configuration']} (${h['monthly_usd']:.2f} a month); "
        f"meanwhile {h['while_down']}",
        ["configuration", "failure", "back without a person in", "how"],
    )
    for config in h["configurations"]:
        name = config["name"] + (" (chosen)" if config["name"] == h["configuration"] else "")
        for n, case in enumerate(config["recovery"]):
            if case["seconds"] is None:
                (step,) = case["by_hand"]
                back = f"never: by hand, {_minutes(step['seconds'])} once someone acts"
                how = step["what"]
            else:
                back = _minutes(case["seconds"])
                how = " + ".join(f"{s['what']} {_minutes(s['seconds'])}" for s in case["steps"])
            grid.add(name if n == 0 else "", case["failure"], back, how)
    return grid


def _minutes(seconds: int) -> str:
    return f"~{seconds} s" if seconds < 120 else f"~{round(seconds / 60)} min"
