"""dbd_agent: slurmctld's accounting agent found stalled is restarted with `scontrol reconfigure`.

slurmctld sends accounting records (job starts and ends, node state) to slurmdbd through an
agent thread that queues them while slurmdbd is away (`sdiag`: "DBD Agent queue size"). From
Slurm 26.05 the agent sends nothing until slurmctld says its state is recovered (SchedMD commit
60bee1fa94, "Defer agent processing until ctld recovery completes"), and a slurmdbd connection
taken down after that clears the signal again (`_shutdown_agent`, src/plugins/
accounting_storage/slurmdbd/slurmdbd_agent.c, 26.05.3 and master of August 2026): the agent
started for the next record then waits for a recovery that comes only when slurmctld starts or
reconfigures. Seen on the virtual cluster with 26.05.5 when a backup took control from a dead
head (docs/head-failure.md): every record it made stayed queued while slurmdbd answered, until a
reconfigure, which re-executes slurmctld, drained the queue within seconds.

So each pass of the controller in control reads the queue: one that stays non-empty without
shrinking for STALL_SECONDS while slurmdbd answers is a stalled agent, and slurmctld is asked
to reconfigure (at most every RESTART_AGAIN_SECONDS). A working agent wakes at least every 10 s
and sends up to 1000 records at a time (`_agent`, same file), so a queue that has not shrunk in
30 s while slurmdbd answers is not a busy one; with slurmdbd away the queue waits for it and
nothing is done.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...contract import DBD_AGENT_WATCH_PATH
from ..context import Context, log, write_atomic
from .act import scontrol

STALL_SECONDS = 30.0
RESTART_AGAIN_SECONDS = 300.0
SDIAG_SECONDS = 30.0
# slurmdbd answering: a query it serves from its database (sacctmgr asks slurmdbd directly).
SLURMDBD_QUERY = ("sacctmgr", "--noheader", "--parsable2", "show", "cluster", "format=cluster")
_QUEUE = re.compile(r"^DBD Agent queue size:\s*(\d+)", re.MULTILINE)


def queue_size(ctx: Context) -> int | None:
    """What `sdiag` says is queued for slurmdbd; None when slurmctld does not answer."""
    result = ctx.bounded(SDIAG_SECONDS, "sdiag")
    found = _QUEUE.search(result.stdout or "") if result.returncode == 0 else None
    return int(found.group(1)) if found else None


def slurmdbd_answers(ctx: Context) -> bool:
    return ctx.bounded(SDIAG_SECONDS, *SLURMDBD_QUERY).returncode == 0


def _load(ctx: Context) -> dict[str, float]:
    try:
        data = json.loads(ctx.path(DBD_AGENT_WATCH_PATH).read_text())
        return {k: float(v) for k, v in data.items()}
    except (OSError, ValueError, AttributeError):
        return {}


def _save(ctx: Context, watch: dict[str, float]) -> None:
    write_atomic(ctx.path(DBD_AGENT_WATCH_PATH), json.dumps(watch).encode(), 0o600)


def watch_dbd_agent(ctx: Context, now: float) -> dict[str, Any] | None:
    """One look at the agent's queue; what was done when it was found stalled, else None.

    The watch (on the state volume, so a backup in control reads what the head saw) keeps the
    queue's size and since when it has not shrunk."""
    size = queue_size(ctx)
    if size is None:
        return None
    watch = _load(ctx)
    restarted = watch.get("restarted", 0.0)
    kept = {"restarted": restarted} if restarted else {}
    if size == 0:
        _save(ctx, kept)  # nothing queued: nothing to watch
        return None
    if "size" not in watch or size < watch["size"]:
        _save(ctx, kept | {"size": float(size), "since": now})  # sending: watched from here
        return None
    stalled = now - watch["since"]
    _save(ctx, watch | {"size": float(size)})
    if stalled < STALL_SECONDS or now - restarted < RESTART_AGAIN_SECONDS:
        return None
    if not slurmdbd_answers(ctx):
        return None  # queued because slurmdbd is away: the agent sends once it is back
    try:
        scontrol(ctx, "reconfigure")
    except RuntimeError as exc:
        log(f"control: restarting slurmctld's stalled accounting agent failed: {exc}")
        return None
    _save(ctx, {"restarted": now})
    log(
        f"control: slurmctld's accounting agent sent nothing for {stalled:.0f} s with "
        f"{size} records queued and slurmdbd answering: asked slurmctld to reconfigure"
    )
    return {"queued": size, "stalled_seconds": round(stalled)}
