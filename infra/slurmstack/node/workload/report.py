"""The acceptance report: one block per pool for people, one JSON document for programs."""

from __future__ import annotations

import json
from dataclasses import asdict

from .accept import PoolReport


def ok(reports: list[PoolReport]) -> bool:
    return all(r.verdict != "fail" for r in reports)


def as_json(cluster: str, reports: list[PoolReport]) -> str:
    document = {"cluster": cluster, "ok": ok(reports), "pools": [asdict(r) for r in reports]}
    return json.dumps(document, indent=2, sort_keys=True)


def _names(nodes: list[str], limit: int = 8) -> str:
    shown = ", ".join(nodes[:limit])
    return shown + (f" and {len(nodes) - limit} more" if len(nodes) > limit else "")


def as_text(cluster: str, reports: list[PoolReport]) -> str:
    lines = [f"acceptance of cluster {cluster}"]
    for r in reports:
        lines.append(f"pool {r.pool}: {r.verdict.upper()}")
        lines.append(f"  nodes: {len(r.nodes)} free" + (f" ({_names(r.nodes)})" if r.nodes else ""))
        if r.unavailable:
            lines.append(f"  not tested: {_names(r.unavailable)}")
        if r.node_check:
            state = "ok" if r.node_check["ok"] else "FAILED"
            lines.append(f"  node check: {state} on {len(r.nodes)} nodes")
        if r.fabric:
            lines.append(f"  {r.fabric['kind']} all-reduce: {r.fabric['detail']}")
            if r.fabric.get("min_busbw_gbps") is not None:
                lines.append(
                    f"    threshold {r.fabric['min_busbw_gbps']} GB/s: {r.fabric['basis']}"
                )
        leaves = (r.fabric or {}).get("leaves")
        if leaves:
            lines.append(f"  leaf switches: {leaves['diagnosis']}")
            for run in leaves["within"]:
                lines.append(f"    inside {run['leaf']} ({'+'.join(run['pair'])}): {run['detail']}")
            for run in leaves["across"]:
                between = " and ".join(run["leaves"])
                lines.append(f"    between {between} ({'+'.join(run['pair'])}): {run['detail']}")
        if r.bisect is not None:
            b = r.bisect
            lines.append(
                f"  bisection: {b['waves']} waves of two-node runs; slow: "
                f"{', '.join(b['slow']) or 'none'}; slow pairs: "
                f"{', '.join('+'.join(p) for p in b['slow_pairs']) or 'none'}"
            )
            for entry in b["drained"]:
                if entry["drained"]:
                    lines.append(f"    drained {entry['node']}: {entry['reason']}")
                else:
                    lines.append(
                        f"    NOT drained {entry['node']} ({entry['error']}); an operator runs:"
                    )
                    lines.append(f"      {entry['command']}")
            if b["unresolved"]:
                lines.append(
                    f"    unresolved (never ran with a good node): {_names(b['unresolved'])}"
                )
        lines += [f"  - {note}" for note in r.notes]
    failed = [r.pool for r in reports if r.verdict == "fail"]
    lines.append(f"verdict: {'FAIL (' + ', '.join(failed) + ')' if failed else 'PASS'}")
    return "\n".join(lines)
