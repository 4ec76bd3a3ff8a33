"""Print a PlanReport as rich tables (a terminal) or plain text (a pipe)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _money(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:,.2f}"


def _short(text: str, limit: int = 90) -> str:
    """The first clause of a basis, for the table; --json keeps it whole."""
    first = text.split("; ")[0]
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _minutes(seconds: int) -> str:
    return f"{seconds / 60:.1f} min"


def _span(low: int, high: int) -> str:
    return f"{low / 60:.1f}-{high / 60:.1f} min"


def print_plan(doc: dict[str, Any], console: Console) -> None:
    s = doc["summary"]
    by_model = ", ".join(f"{n} {m}" for m, n in sorted(s["gpus_by_model"].items())) or "none"
    console.print(
        f"[bold]{doc['cluster']}[/bold] in {doc['region']} ({doc['availability_zone']}): "
        f"{s['nodes']} nodes, {s['gpus']} accelerators ({by_model}), "
        f"{s['resources']} resources in {s['components']} components"
    )

    table = Table(title="Resources by component", title_justify="left")
    table.add_column("component")
    table.add_column("resources", justify="right")
    table.add_column("types")
    for comp in doc["components"]:
        if not comp["resources"]:
            continue  # a component that only groups others (the cluster itself)
        types = ", ".join(f"{t.split(':')[-1]} ×{n}" for t, n in comp["by_type"].items())
        table.add_row(comp["component"], str(comp["resources"]), types)
    console.print(table)

    table = Table(title="Capacity", title_justify="left")
    for col in (
        "pool",
        "nodes",
        "instance type",
        "accelerators",
        "GPU memory",
        "BF16 dense",
        "EFA / node",
        "cores",
        "memory",
    ):
        table.add_column(col, justify="left" if col in ("pool", "instance type") else "right")
    for p in doc["capacity"]["pools"]:
        acc = f"{p['accelerators']} {p['accelerator']}" if p["accelerator"] else "-"
        table.add_row(
            p["pool"],
            str(p["nodes"]),
            p["instance_type"],
            acc,
            f"{p['accelerator_memory_gib']:,.0f} GiB" if p["accelerators"] else "-",
            f"{p['bf16_dense_pflops']:,.1f} PFLOP/s" if p["accelerators"] else "-",
            f"{p['efa_gbps_per_node']:,.0f} Gbit/s" if p["efa"] else "no EFA",
            f"{p['cpu_cores']:,}",
            f"{p['memory_gib']:,.0f} GiB",
        )
    t = doc["capacity"]["totals"]
    table.add_row(
        "total",
        str(t["nodes"]),
        "",
        str(t["accelerators"]),
        f"{t['accelerator_memory_gib']:,.0f} GiB",
        f"{t['bf16_dense_pflops']:,.1f} PFLOP/s",
        f"{t['efa_gbps_total']:,.0f} Gbit/s all",
        f"{t['cpu_cores']:,}",
        f"{t['memory_gib']:,.0f} GiB",
        style="bold",
    )
    console.print(table)

    table = Table(title="Storage tiers", title_justify="left")
    for col in ("tier", "mount", "scope", "capacity", "notes"):
        table.add_column(col)
    for tier in doc["storage"]:
        notes = []
        if tier.get("throughput_mbps"):
            notes.append(f"{tier['throughput_mbps']:,} MB/s")
        if tier.get("efa"):
            notes.append("EFA")
        if tier.get("s3_link"):
            notes.append(f"linked to s3://<bucket>/{tier['s3_link']}")
        if tier.get("versioning"):
            notes.append(f"versioned, old versions kept {tier['noncurrent_version_days']} days")
        table.add_row(
            tier["tier"],
            tier.get("mount") or "-",
            tier["scope"],
            tier["capacity"],
            ", ".join(notes),
        )
    console.print(table)

    cost = doc["cost"]
    table = Table(title="Cost at full size (USD)", title_justify="left")
    for col in ("item", "per hour", "per 30 days", "basis / note"):
        table.add_column(col, justify="right" if col.startswith("per") else "left")
    for line in cost["lines"]:
        note = line["basis"] + (f"; {line['note']}" if line["note"] else "")
        table.add_row(line["item"], _money(line["hourly_usd"]), _money(line["monthly_usd"]), note)
    table.add_row(
        "total", _money(cost["hourly_usd"]), _money(cost["per_30_days_usd"]), "", style="bold"
    )
    console.print(table)
    for usage in cost["usage_billed"]:
        console.print(
            f"  billed by use, not in the total: {usage['item']} at {usage['unit_price']}"
        )
    sources = sorted({line["source"] for line in cost["lines"]})
    console.print("  price sources:")
    for source in sources:
        console.print(f"   - {source}", soft_wrap=True)

    ready = doc["time_to_ready"]
    low, high = ready["range_seconds"]
    table = Table(
        title=f"Time to ready: {_minutes(ready['seconds'])}, {_span(low, high)} with the published "
        f"ranges (pulumi up returns after {_minutes(ready['stack_complete_seconds'])})",
        title_justify="left",
    )
    for col in ("start", "finish", "step", "range", "basis"):
        table.add_column(col, justify="right" if col in ("start", "finish") else "left")
    for step in ready["critical_path"]:
        step_low, step_high = step["range_s"]
        table.add_row(
            _minutes(step["start_s"]),
            _minutes(step["finish_s"]),
            step["step"],
            _span(step_low, step_high) if step_low != step_high else "",
            _short(step["basis"]),
        )
    console.print(table)
    console.print("  (each step's full basis: slurmstack plan --json)")

    if doc["warnings"]:
        console.print("[yellow]Warnings[/yellow]")
        for line in doc["warnings"]:
            console.print(f"  {line}", soft_wrap=True)
