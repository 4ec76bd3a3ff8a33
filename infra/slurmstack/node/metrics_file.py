"""The agent's metrics, as node_exporter's textfile collector reads them: one file per writer
(METRICS_DIR/<stem>.prom, Prometheus's text format), written whole and renamed into place so a
scrape never reads half of one. Rooms write their own (the health check its verdicts, the
observe room the rest); this is the one writer."""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..contract import METRICS_DIR, Metric
from .context import Context, write_atomic

Sample = tuple[Metric | str, dict[str, str], float]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def exposition(samples: Iterable[Sample]) -> str:
    """Prometheus's text format: a TYPE line per metric (counters end in _total), then its
    samples; the metrics in the order first seen."""
    by_name: dict[str, list[str]] = {}
    for name, labels, value in samples:
        pairs = ",".join(f'{k}="{_escape(str(v))}"' for k, v in sorted(labels.items()))
        number = "NaN" if math.isnan(value) else f"{value:.17g}"
        by_name.setdefault(str(name), []).append(
            f"{name}{{{pairs}}} {number}" if pairs else f"{name} {number}"
        )
    out = []
    for name, lines in by_name.items():
        kind = "counter" if name.endswith("_total") else "gauge"
        out += [f"# TYPE {name} {kind}", *lines]
    return "\n".join(out) + "\n" if out else ""


def write_metrics(ctx: Context, stem: str, samples: Iterable[Sample]) -> str:
    """Replace METRICS_DIR/<stem>.prom; the text written."""
    text = exposition(samples)
    write_atomic(ctx.path(f"{METRICS_DIR}/{stem}.prom"), text.encode(), 0o644)
    return text
