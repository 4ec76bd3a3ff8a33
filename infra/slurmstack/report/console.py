"""Print a PlanReport: rich tables on a terminal, plain aligned text through a pipe (see
report.tables: no cell is ever cut)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from slurmstack.report.head_failure_console import head_failure_grid
from slurmstack.report.slurm_console import slurm_grid
from slurmstack.report.tables import Grid, print_grid


def _money(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:,.2f}"


def _first_clause(text: str) -> str:
    """The first clause of a basis, for the table; --json keeps it whole."""
    return text.split("; ")[0]


def _minutes(seconds: int) -> str:
    return f"{seconds / 60:.1f} min"


def _span(low: int, high: int) -> str:
    return f"{low / 60:.1f}-{high / 60:.1f} min"


def _components(doc: dict[str, Any]) -> Grid:
    grid = Grid("Resources by component", ["component", "resources", "types"], {"resources"})
    for comp in doc["components"]:
        if not comp["resources"]:
            continue  # a component that only groups others (the cluster itself)
        types = ", ".join(f"{t.split(':')[-1]} ×{n}" for t, n in comp["by_type"].items())
        grid.add(comp["component"], str(comp["resources"]), types)
    return grid


def _nodes(always_on: int, most: int) -> str:
    """A pool's nodes: "4", or "1-8" (en dash) when elastic (always on, at most); figures beside it are
    at most."""
    return str(most) if always_on == most else f"{always_on}–{most}"


def _capacity(doc: dict[str, Any]) -> Grid:
    columns = [
        "pool",
        "nodes",
        "instance type",
        "accelerators",
        "GPU memory",
        "BF16 dense",
        "EFA / node",
        "cores",
        "memory",
    ]
    grid = Grid("Capacity", columns, set(columns) - {"pool", "instance type"})
    for p in doc["capacity"]["pools"]:
        acc = f"{p['accelerators']} {p['accelerator']}" if p["accelerator"] else "-"
        grid.add(
            p["pool"],
            _nodes(p["always_on_nodes"], p["nodes"]),
            p["instance_type"],
            acc,
            f"{p['accelerator_memory_gib']:,.0f} GiB" if p["accelerators"] else "-",
            f"{p['bf16_dense_pflops']:,.1f} PFLOP/s" if p["accelerators"] else "-",
            f"{p['efa_gbps_per_node']:,.0f} Gbit/s" if p["efa"] else "no EFA",
            f"{p['cpu_cores']:,}",
            f"{p['memory_gib']:,.0f} GiB",
        )
    t = doc["capacity"]["totals"]
    grid.add(
        "total",
        _nodes(t["always_on_nodes"], t["nodes"]),
        "",
        str(t["accelerators"]),
        f"{t['accelerator_memory_gib']:,.0f} GiB",
        f"{t['bf16_dense_pflops']:,.1f} PFLOP/s",
        f"{t['efa_gbps_total']:,.0f} Gbit/s all",
        f"{t['cpu_cores']:,}",
        f"{t['memory_gib']:,.0f} GiB",
        bold=True,
    )
    return grid


def _storage(doc: dict[str, Any]) -> Grid:
    grid = Grid("Storage tiers", ["tier", "mount", "scope", "capacity", "notes"])
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
        grid.add(
            tier["tier"],
            tier.get("mount") or "-",
            tier["scope"],
            tier["capacity"],
            ", ".join(notes),
        )
    return grid


def _mounts(doc: dict[str, Any]) -> Grid:
    grid = Grid("Mounts", ["mount", "what", "reached by", "cost", "first data"])
    for mount in doc["mounts"]:
        grid.add(mount["mount"], mount["what"], mount["reached_by"], mount["cost"],
                 mount["first_data"])  # fmt: skip
    return grid


def _images(doc: dict[str, Any]) -> Grid:
    section = doc["images"]
    low, high = section["bake_minutes"]
    cost_low, cost_high = section["bake_cost_usd"]
    grid = Grid(
        f"Node images: baked once in {low}-{high} min, ${cost_low:,.2f}-${cost_high:,.2f} "
        "of build instances (first deploy only; later pulumi ups reuse them)",
        ["image", "nodes", "parent", "baked in"],
    )
    for image in section["baked"]:
        baked = ", ".join(f"{b['piece']} {b['version']}" for b in image["baked"])
        grid.add(
            f"{image['image']} (v{image['version']}, built on {image['build_instance_type']})",
            ", ".join(image["nodes"]),
            f"{image['parent']} ({image['parent_pinned']})",
            baked,
        )
    for own in section["own"]:
        grid.add(
            own["ami"],
            own["node"],
            "your own image",
            "checked at boot: " + " ".join(own["contract"]),
        )
    return grid


def unpriced_note(doc: dict[str, Any]) -> str:
    """'' when every cost line has a price, else what the totals leave out."""
    if doc["summary"]["cost_complete"]:
        return ""
    left_out = [line["item"] for line in doc["cost"]["lines"] if line["hourly_usd"] is None]
    return "leaves out what has no price: " + ", ".join(left_out)


def _cost(doc: dict[str, Any]) -> Grid:
    cost = doc["cost"]
    grid = Grid(
        "Cost at full size (USD)",
        ["item", "per hour", "per 30 days", "basis / note"],
        {"per hour", "per 30 days"},
    )
    for line in cost["lines"]:
        note = line["basis"] + (f"; {line['note']}" if line["note"] else "")
        grid.add(line["item"], _money(line["hourly_usd"]), _money(line["monthly_usd"]), note)
    grid.add(
        "total" if doc["summary"]["cost_complete"] else "total (incomplete)",
        _money(cost["hourly_usd"]),
        _money(cost["per_30_days_usd"]),
        unpriced_note(doc),
        bold=True,
    )
    if cost["idle_hourly_usd"] != cost["hourly_usd"]:
        elastic = [p["pool"] for p in doc["capacity"]["pools"] if p["elastic_nodes"]]
        grid.add(
            "total when idle",
            _money(cost["idle_hourly_usd"]),
            _money(cost["idle_per_30_days_usd"]),
            f"no job running: the elastic nodes of {', '.join(elastic)} stopped",
            bold=True,
        )
    return grid


def _ready(doc: dict[str, Any]) -> Grid:
    ready = doc["time_to_ready"]
    low, high = ready["range_seconds"]
    grid = Grid(
        f"Time to ready: {_minutes(ready['seconds'])}, {_span(low, high)} with the published "
        f"ranges (pulumi up returns after {_minutes(ready['stack_complete_seconds'])})",
        ["start", "finish", "step", "range", "basis"],
        {"start", "finish"},
    )
    for step in ready["critical_path"]:
        step_low, step_high = step["range_s"]
        grid.add(
            _minutes(step["start_s"]),
            _minutes(step["finish_s"]),
            step["step"],
            _span(step_low, step_high) if step_low != step_high else "",
            _first_clause(step["basis"]),
        )
    return grid


def _people(doc: dict[str, Any]) -> Grid:
    people = doc["people"]
    directory = people["directory"]
    who = f"{people['users']} users, {people['groups']} groups"
    if directory:
        who += f", and the people of {directory['type']} {', '.join(directory['uris'])}"
    grid = Grid(f"People: {who}", ["login pool", "nodes", "instance type", "direct SSH from"])
    for pool in people["login_pools"]:
        direct = ", ".join(pool["ssh_cidrs"]) or "nowhere (Session Manager only)"
        if pool["load_balancer"]:
            direct += " (load balancer)"
        grid.add(pool["name"], str(pool["count"]), pool["instance_type"], direct)
    return grid


def _topology(doc: dict[str, Any]) -> Grid:
    grid = Grid("Network topology (from EC2's instance topology)", ["pool", "topology", "why"])
    for pool in doc["topology"]["pools"]:
        why, blocks = pool["why"], pool.get("blocks")
        if blocks:
            why += (
                f" (partition {blocks['partition']}: {blocks['count']} blocks of "
                f"{blocks['instances_per_block']})"
            )
        grid.add(pool["pool"], pool["topology"], why)
    return grid


def print_plan(doc: dict[str, Any], console: Console) -> None:
    s = doc["summary"]
    by_model = ", ".join(f"{n} {m}" for m, n in sorted(s["gpus_by_model"].items())) or "none"
    idle = (
        f"{s['idle_nodes']} nodes and {s['idle_gpus']} accelerators when idle, "
        if s["idle_nodes"] != s["nodes"]
        else ""
    )
    console.print(
        f"[bold]{doc['cluster']}[/bold] in {doc['region']} ({doc['availability_zone']}): "
        f"{s['nodes']} nodes, {s['gpus']} accelerators ({by_model}), {idle}"
        f"{s['resources']} resources in {s['components']} components",
        soft_wrap=not console.is_terminal,
    )
    cost = doc["cost"]
    sections: list[tuple[Grid, list[str]]] = [
        (_components(doc), []),
        (_capacity(doc), []),
        (_storage(doc), []),
        (
            _mounts(doc),
            [f"   - {s}" for s in sorted({s for m in doc["mounts"] for s in m["sources"]})],
        ),
        (_images(doc), []),
        (slurm_grid(doc), []),
        (head_failure_grid(doc), ["  (each step's basis: slurmstack plan --json)"]),
        (_topology(doc), [f"  Slurm: {doc['topology']['slurm']} (docs/topology.md)"]),
        (_people(doc), [f"  the way in: {doc['people']['way_in']}"]),
        (
            _cost(doc),
            [
                f"  billed by use, not in the total: {u['item']} at {u['unit_price']}"
                for u in cost["usage_billed"]
            ]
            + ["  price sources:"]
            + [f"   - {source}" for source in sorted({line["source"] for line in cost["lines"]})],
        ),
        (
            _ready(doc),
            [
                f"  once the images exist (later pulumi ups reuse them): "
                f"{_minutes(doc['time_to_ready']['images_built_seconds'])}",
                "  (each step's full basis: slurmstack plan --json)",
            ],
        ),
    ]
    for grid, after in sections:
        print_grid(grid, console)
        for text in after:
            console.print(text, soft_wrap=True, markup=False, highlight=False)

    if doc["warnings"]:
        console.print("[yellow]Warnings[/yellow]")
        for line in doc["warnings"]:
            console.print(f"  {line}", soft_wrap=True, markup=False, highlight=False)
