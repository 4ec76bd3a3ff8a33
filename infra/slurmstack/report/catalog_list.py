"""`slurmstack catalog`: what the instance catalog knows, with facts and prices.

One row per instance type: CPUs and memory, accelerators, EFA, network, NVMe, how it can be
bought, the on-demand list price (with its Region and date) and where it is offered. With a
Region, only the types offered there; prices stay the catalog's (its Region is shown).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from slurmstack.catalog import Catalog, InstanceFacts
from slurmstack.report.tables import Grid

COLUMNS = [
    "instance type",
    "vCPUs",
    "memory",
    "accelerators",
    "BF16 dense",
    "EFA",
    "network",
    "NVMe",
    "bought as",
    "on-demand",
    "offered in",
]
RIGHT = {"vCPUs", "memory", "BF16 dense", "EFA", "network", "on-demand"}


@dataclass(frozen=True)
class Selection:
    region: str | None = None
    accelerators_only: bool = False


def selected(catalog: Catalog, selection: Selection) -> list[tuple[str, InstanceFacts]]:
    rows = []
    for name, facts in catalog.instances.items():
        if selection.accelerators_only and facts.accelerator is None:
            continue
        offered = catalog.offered_in(name) or ()
        if selection.region is not None and selection.region not in offered:
            continue
        rows.append((name, facts))
    return sorted(rows, key=lambda row: (_family(row[0]), row[1].vcpus, row[0]))


def _family(name: str) -> str:
    return name.partition(".")[0]


def _accelerators(facts: InstanceFacts) -> str:
    acc = facts.accelerator
    if acc is None:
        return "-"
    return f"{acc.count} × {acc.model} {acc.memory_gib:g} GiB"


def _price(facts: InstanceFacts) -> str:
    if facts.price is None:
        return "no list price"
    return f"${facts.price.usd_per_hour:,.4f}/h {facts.price.region}"


def _offered(catalog: Catalog, name: str, selection: Selection) -> str:
    offered = catalog.offered_in(name)
    if offered is None:
        return "?"
    if selection.region is not None:
        return selection.region
    return f"{len(offered)} of {len(catalog.regions)} Regions"


def catalog_grid(catalog: Catalog, selection: Selection) -> Grid:
    where = f" offered in {selection.region}" if selection.region else ""
    kind = "accelerated instance types" if selection.accelerators_only else "instance types"
    rows = selected(catalog, selection)
    grid = Grid(f"{len(rows)} {kind}{where}", COLUMNS, RIGHT)
    for name, facts in rows:
        acc = facts.accelerator
        efa = str(facts.max_efa_interfaces) if facts.efa_supported else "-"
        nvme = f"{facts.nvme.count} × {facts.nvme.size_gb:,} GB" if facts.nvme else "-"
        grid.add(
            name,
            str(facts.vcpus),
            f"{facts.memory_mib / 1024:,.0f} GiB",
            _accelerators(facts),
            f"{acc.bf16_dense_tflops * acc.count / 1000:,.2f} PFLOP/s" if acc else "-",
            efa,
            f"{facts.network_gbps:g} Gbit/s",
            nvme,
            ", ".join(sorted(u.value for u in facts.usage_classes)),
            _price(facts),
            _offered(catalog, name, selection),
        )
    return grid


def catalog_document(catalog: Catalog, selection: Selection) -> dict[str, Any]:
    """The same rows as data (``slurmstack catalog --json``)."""
    out = []
    for name, facts in selected(catalog, selection):
        record = facts.model_dump(mode="json")
        record["usage_classes"] = sorted(record["usage_classes"])
        out.append({"instance_type": name, **record, "regions": catalog.offered_in(name)})
    return {"region": selection.region, "instance_types": out}


def sources_used(catalog: Catalog, rows: list[tuple[str, InstanceFacts]]) -> list[str]:
    """Citations behind the rows: the facts' sources and the prices' sources."""
    ids = {facts.source for _, facts in rows}
    ids |= {facts.price.source for _, facts in rows if facts.price is not None}
    ids.add("ec2-region-offerings")
    dates = sorted({facts.price.date for _, facts in rows if facts.price is not None})
    lines = [f"{key}: {catalog.sources[key]}" for key in sorted(ids) if key in catalog.sources]
    if dates:
        lines.append(f"on-demand prices recorded {', '.join(dates)}")
    return lines
