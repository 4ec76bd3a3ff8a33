"""Grafana's dashboard JSON model (schema version 39), as far as slurmstack's dashboards use it:
a panel of PromQL queries and a dashboard of panels laid out on Grafana's 24-column grid, every
query on the head's Prometheus datasource (render/dashboards.py holds the dashboards)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DATASOURCE = {"type": "prometheus", "uid": "slurmstack"}
GRAFANA_SCHEMA_VERSION = 39
WIDTH = 24  # Grafana's grid is 24 columns wide


@dataclass(frozen=True)
class Panel:
    title: str
    queries: tuple[tuple[str, str], ...]  # (PromQL, legend)
    kind: str = "timeseries"  # or "stat", "table"
    unit: str = "short"
    width: int = 12

    def document(self, panel_id: int, x: int, y: int) -> dict[str, Any]:
        targets = [
            {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend,
             "datasource": DATASOURCE, **({"instant": True, "format": "table"} if self.kind == "table" else {})}
            for i, (expr, legend) in enumerate(self.queries)
        ]  # fmt: skip
        return {
            "id": panel_id,
            "type": self.kind,
            "title": self.title,
            "datasource": DATASOURCE,
            "gridPos": {"x": x, "y": y, "w": self.width, "h": 8},
            "fieldConfig": {"defaults": {"unit": self.unit}, "overrides": []},
            "targets": targets,
        }


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    panels: tuple[Panel, ...]
    variables: tuple[str, ...] = field(default=())  # label names offered as template variables

    def document(self, cluster: str) -> dict[str, Any]:
        panels, x, y = [], 0, 0
        for index, panel in enumerate(self.panels, start=1):
            if x + panel.width > WIDTH:
                x, y = 0, y + 8
            panels.append(panel.document(index, x, y))
            x += panel.width
        return {
            "generated_by": "slurmstack",  # Grafana keeps a dashboard's other keys as they are
            "uid": f"slurmstack-{self.uid}",
            "title": f"{cluster}: {self.title}",
            "tags": ["slurmstack", cluster],
            "schemaVersion": GRAFANA_SCHEMA_VERSION,
            "time": {"from": "now-6h", "to": "now"},
            "refresh": "1m",
            "editable": False,
            "panels": panels,
            "templating": {"list": []},
        }
