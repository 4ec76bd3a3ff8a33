"""Pictures of the dashboards: one PNG per dashboard (render/dashboards.py), each panel drawn
from a Prometheus's answers to its own queries, as Grafana runs them: a time-series panel's
queries over the time range, a table panel's as instant queries at its end. matplotlib stands in
for Grafana (no registry here carries Grafana); the panels, queries and legends are the
dashboards' own.

    uv run python tools/dashboard_pictures.py DEFINITION --prometheus http://127.0.0.1:9090 \\
        --out docs/images --minutes 30

The virtual cluster's observability scenario (tests/vcluster/test_observability.py) draws them
from its head's Prometheus; with SLURMSTACK_DASHBOARD_PICTURES=docs/images it writes the
pictures docs/observing.md shows.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import math
import re
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from PIL import Image

from slurmstack.render.grafana_model import WIDTH, Dashboard, Panel

# query_range(expr, start, end, step) and query(expr, at): Prometheus's HTTP API results.
RangeQuery = Callable[[str, float, float, float], list[dict[str, Any]]]
InstantQuery = Callable[[str, float], list[dict[str, Any]]]
PANEL_INCHES = (6.0, 2.4)
DPI = 80
COLOURS = 48  # a palette this small keeps a picture at a few tens of KB
MAX_SERIES = 8  # lines drawn per panel (a legend beyond that is unreadable here)
MAX_ROWS = 6  # rows of a table panel
HIDDEN_LABELS = ("__name__", "job", "instance", "cluster")


def legend(template: str, labels: dict[str, str]) -> str:
    """Grafana's legend format: {{label}} replaced by the series' value."""
    text = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)
    if text.strip():
        return text.strip()
    shown = {k: v for k, v in labels.items() if k not in HIDDEN_LABELS}
    return ", ".join(f"{k}={v}" for k, v in sorted(shown.items())) or "value"


def _day(seconds: float) -> float:
    """Seconds since the epoch as matplotlib's dates (days since its epoch), in UTC."""
    when = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return float(mdates.date2num(when))  # type: ignore[no-untyped-call]


def _with_gaps(points: list[tuple[float, float]], step: float) -> tuple[list[float], list[float]]:
    """The points as matplotlib's dates and values, broken where the series had no value for
    more than two steps (a job's series between two jobs): no line is drawn across a gap."""
    xs: list[float] = []
    ys: list[float] = []
    for i, (t, v) in enumerate(points):
        if i and t - points[i - 1][0] > 2 * step:
            xs.append(_day(t - step))
            ys.append(math.nan)
        xs.append(_day(t))
        ys.append(v)
    return xs, ys


def _time_series(
    ax: Axes, panel: Panel, query_range: RangeQuery, start: float, end: float, step: float
) -> int:
    drawn = 0
    for expr, template in panel.queries:
        for series in query_range(expr, start, end, step)[: MAX_SERIES - drawn]:
            xs, ys = _with_gaps([(float(t), float(v)) for t, v in series["values"]], step)
            ax.plot(xs, ys, linewidth=1.2, label=legend(template, series["metric"]))
            drawn += 1
    ax.set_xlim(_day(start), _day(end))
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))  # type: ignore[no-untyped-call]
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    if panel.unit != "short":
        ax.set_ylabel(panel.unit, fontsize=7)
    if drawn:
        ax.legend(fontsize=7, loc="upper left", frameon=False)
    return drawn


def _table(ax: Axes, panel: Panel, query: InstantQuery, at: float) -> int:
    rows: list[dict[str, str]] = []
    for expr, _template in panel.queries:
        for series in query(expr, at):
            labels = {k: v for k, v in series["metric"].items() if k not in HIDDEN_LABELS}
            rows.append({**labels, "value": f"{float(series['value'][1]):.4g}"})
    ax.axis("off")
    if not rows:
        return 0
    columns = [*sorted({k for row in rows for k in row} - {"value"}), "value"]
    cells = [[row.get(c, "") for c in columns] for row in rows[:MAX_ROWS]]
    table = ax.table(cellText=cells, colLabels=columns, loc="upper center", cellLoc="left")
    table.auto_set_font_size(False)
    table.set_fontsize(6.5)
    return len(rows)


def draw(
    dashboard: Dashboard,
    cluster: str,
    query_range: RangeQuery,
    query: InstantQuery,
    start: float,
    end: float,
    out: Path,
) -> dict[str, int]:
    """The dashboard's picture at ``out``; how many series (or rows) each panel drew."""
    per_row = WIDTH // 12
    rows = -(-len(dashboard.panels) // per_row)
    figure, axes = plt.subplots(
        rows,
        per_row,
        figsize=(PANEL_INCHES[0] * per_row, PANEL_INCHES[1] * rows),
        squeeze=False,
    )
    step = max(5.0, (end - start) / 240)
    drawn = {}
    for index, ax in enumerate(axes.flat):
        if index >= len(dashboard.panels):
            ax.axis("off")
            continue
        panel = dashboard.panels[index]
        ax.set_title(panel.title, fontsize=9, loc="left")
        if panel.kind == "table":
            drawn[panel.title] = _table(ax, panel, query, end)
        else:
            drawn[panel.title] = _time_series(ax, panel, query_range, start, end, step)
    when = datetime.datetime.fromtimestamp(end, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    figure.suptitle(f"{cluster}: {dashboard.title} (to {when})", fontsize=11, x=0.01, ha="left")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    plt.close(figure)
    buffer.seek(0)
    picture = Image.open(buffer).convert("RGB").quantize(colors=COLOURS)
    out.parent.mkdir(parents=True, exist_ok=True)
    picture.save(out, format="PNG", optimize=True)
    return drawn


def picture_name(dashboard: Dashboard) -> str:
    return f"dashboard-{dashboard.uid}.png"


# --- against a Prometheus reached over HTTP ---------------------------------------------------


def _api(url: str, path: str, params: dict[str, str]) -> Any:
    full = f"{url.rstrip('/')}/api/v1/{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(full, timeout=30) as response:
        body = json.load(response)
    if body.get("status") != "success":
        raise RuntimeError(f"{full}: {body}")
    return body["data"]["result"]


def main(argv: Sequence[str] | None = None) -> int:
    from slurmstack.plan import build_plan
    from slurmstack.plan.observability import observability_plan
    from slurmstack.render.dashboards import dashboards
    from slurmstack.validate import validate_file

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("definition", help="the cluster definition (YAML)")
    parser.add_argument("--prometheus", required=True, help="Prometheus's URL")
    parser.add_argument("--out", default="docs/images", help="where the PNGs go")
    parser.add_argument("--minutes", type=float, default=60, help="the time range, to now")
    args = parser.parse_args(argv)
    result = validate_file(Path(args.definition))
    if not result.ok or result.spec is None:
        for finding in result.findings:
            print(finding.line(), file=sys.stderr)
        return 1
    plan = build_plan(result.spec)
    end = time.time()
    start = end - args.minutes * 60

    def query_range(expr: str, s: float, e: float, step: float) -> list[dict[str, Any]]:
        params = {"query": expr, "start": f"{s:.3f}", "end": f"{e:.3f}", "step": f"{step:g}"}
        return list(_api(args.prometheus, "query_range", params))

    def query(expr: str, at: float) -> list[dict[str, Any]]:
        return list(_api(args.prometheus, "query", {"query": expr, "time": f"{at:.3f}"}))

    for dashboard in dashboards(observability_plan(plan)):
        out = Path(args.out) / picture_name(dashboard)
        draw(dashboard, plan.name, query_range, query, start, end, out)
        print(f"{out} ({out.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
