"""Events: what an operator must hear about, one JSON object a line in EVENTS_LOG_PATH (time,
event, subject, ok, detail), each also said on stderr as one plain line (cloud-init's output
and the console on a boot, the journal under a unit). Shipped with the node's logs
(SHIPPED_LOGS) and read on the node with `jq`."""

from __future__ import annotations

import datetime
import json
from typing import Any

from ..contract import EVENTS_LOG_PATH
from .context import Context, log


def record_event(
    ctx: Context, event: str, subject: str, ok: bool, detail: str, **extra: Any
) -> dict[str, Any]:
    """Append one event and say it; returns the record."""
    when = datetime.datetime.fromtimestamp(float(ctx.clock()), datetime.UTC)
    entry: dict[str, Any] = {
        "time": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "event": event,
        "subject": subject,
        "ok": ok,
        "detail": detail,
        **extra,
    }
    path = ctx.path(EVENTS_LOG_PATH)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")
    log(f"{event}: {subject}: {'ok' if ok else 'FAILED'}: {detail}")
    return entry


def read_events(ctx: Context) -> list[dict[str, Any]]:
    path = ctx.path(EVENTS_LOG_PATH)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
