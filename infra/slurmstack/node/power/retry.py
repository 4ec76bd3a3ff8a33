"""When a pool may launch again: after a failed launch it waits LaunchRetry.delay(failures)
seconds (doubling with each failure in a row, capped), a success forgets its failures. Kept in
one JSON file in slurmctld's state directory (POWER_STATE_PATH), written by the programs
slurmctld runs and read by the sweep, all as SlurmUser. slurmctld may run several of them at
once (a resume while another is still launching, a resume-fail): every change is a read,
modify and write under one lock (``RetryState.changing``), so none is lost."""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from ...contract import POWER_STATE_PATH, LaunchRetry
from ..context import Context, write_atomic


@dataclass(frozen=True)
class PoolFailures:
    failures: int  # failed launches in a row
    retry_at: float  # seconds since the epoch: no launch before
    error: str  # the last one, as the nodes' reason says it


class RetryState:
    def __init__(self, pools: dict[str, PoolFailures]) -> None:
        self.pools = pools

    @classmethod
    def load(cls, ctx: Context) -> RetryState:
        path = ctx.path(POWER_STATE_PATH)
        try:
            data = json.loads(path.read_text())
            return cls({k: PoolFailures(**v) for k, v in data.get("pools", {}).items()})
        except (OSError, ValueError, TypeError):
            return cls({})  # none yet, or unreadable: no pool waits

    @classmethod
    @contextlib.contextmanager
    def changing(cls, ctx: Context) -> Iterator[RetryState]:
        """The state as it is now, saved when the block ends, with no other change between
        (an exclusive lock on a file beside it, held for the block: keep it short)."""
        lock = ctx.path(POWER_STATE_PATH + ".lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with lock.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                state = cls.load(ctx)
                yield state
                state.save(ctx)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def save(self, ctx: Context) -> None:
        data = {"pools": {k: asdict(v) for k, v in sorted(self.pools.items())}}
        body = (json.dumps(data, indent=1, sort_keys=True) + "\n").encode()
        write_atomic(ctx.path(POWER_STATE_PATH), body, 0o644)

    def waiting(self, pool: str, now: float) -> PoolFailures | None:
        """The pool's failures while its retry is not due yet, else None."""
        entry = self.pools.get(pool)
        return entry if entry is not None and now < entry.retry_at else None

    def due(self, pool: str, now: float) -> bool:
        return self.waiting(pool, now) is None

    def failed(self, pool: str, error: str, now: float, policy: LaunchRetry) -> PoolFailures:
        previous = self.pools.get(pool)
        failures = (previous.failures if previous else 0) + 1
        entry = PoolFailures(failures, now + policy.delay(failures), error)
        self.pools[pool] = entry
        return entry

    def succeeded(self, pool: str) -> None:
        self.pools.pop(pool, None)
