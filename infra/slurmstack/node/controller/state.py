"""The controller's memory between passes, on the head node's state volume (a replaced head
keeps it): replacements per pool (the breaker counts them), the breakers that tripped, the
reboots it issued, and since when each terminating instance has waited. Every entry ages out,
so it grows with pools and recent events, never with the number of nodes."""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ...contract import CONTROLLER_STATE_PATH, RepairPolicy
from ..context import Context, write_atomic

# Instances whose Unhealthy mark the breaker has counted, kept this long (seconds) at least.
COUNTED_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class Trip:
    since: float
    why: str


@dataclass(frozen=True)
class Waiting:
    """A terminating instance the controller holds in its lifecycle hook."""

    since: float  # first seen terminating
    idle_since: float | None = None  # first seen with no job on its node


@dataclass(frozen=True)
class ControllerState:
    replacements: dict[str, tuple[tuple[float, str], ...]] = field(default_factory=dict)
    breakers: dict[str, Trip] = field(default_factory=dict)
    reboots: dict[str, tuple[float, str]] = field(default_factory=dict)  # node -> (time, cause)
    counted: dict[str, float] = field(default_factory=dict)  # instance -> when counted
    terminating: dict[str, Waiting] = field(default_factory=dict)

    def recent(self, pool: str, now: float, policy: RepairPolicy) -> int:
        start = now - policy.breaker_window_minutes * 60
        return sum(1 for t, _ in self.replacements.get(pool, ()) if t >= start)

    def count(self, pool: str, instance: str, now: float) -> ControllerState:
        """A replacement in ``pool`` (once per instance)."""
        if instance in self.counted:
            return self
        history = (*self.replacements.get(pool, ()), (now, instance))
        return replace(
            self,
            replacements={**self.replacements, pool: history},
            counted={**self.counted, instance: now},
        )

    def trip(self, pool: str, now: float, why: str) -> ControllerState:
        return replace(self, breakers={**self.breakers, pool: Trip(now, why)})

    def reset(self, pool: str, node_prefix: str) -> ControllerState:
        """An operator's word that the pool is fine: its breaker closed, its replacements and
        the reboots of its nodes forgotten."""
        breakers = {k: v for k, v in self.breakers.items() if k != pool}
        replacements = {k: v for k, v in self.replacements.items() if k != pool}
        reboots = {n: r for n, r in self.reboots.items() if not n.startswith(node_prefix)}
        return replace(self, breakers=breakers, replacements=replacements, reboots=reboots)

    def pruned(self, now: float, policy: RepairPolicy, terminating: set[str]) -> ControllerState:
        window = policy.breaker_window_minutes * 60
        reboot_window = policy.reboot_window_minutes * 60
        return replace(
            self,
            replacements={
                pool: kept
                for pool, history in self.replacements.items()
                if (kept := tuple(e for e in history if e[0] >= now - window))
            },
            reboots={n: r for n, r in self.reboots.items() if r[0] >= now - reboot_window},
            counted={
                i: t for i, t in self.counted.items() if t >= now - max(window, COUNTED_SECONDS)
            },
            terminating={i: w for i, w in self.terminating.items() if i in terminating},
        )


def to_json(state: ControllerState) -> str:
    data: dict[str, Any] = {
        "replacements": {p: [list(e) for e in h] for p, h in state.replacements.items()},
        "breakers": {p: {"since": t.since, "why": t.why} for p, t in state.breakers.items()},
        "reboots": {n: list(r) for n, r in state.reboots.items()},
        "counted": state.counted,
        "terminating": {
            i: {"since": w.since, "idle_since": w.idle_since} for i, w in state.terminating.items()
        },
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def from_json(text: str) -> ControllerState:
    data = json.loads(text)
    return ControllerState(
        replacements={
            p: tuple((float(t), str(i)) for t, i in h)
            for p, h in data.get("replacements", {}).items()
        },
        breakers={
            p: Trip(float(t["since"]), str(t["why"])) for p, t in data.get("breakers", {}).items()
        },
        reboots={n: (float(r[0]), str(r[1])) for n, r in data.get("reboots", {}).items()},
        counted={i: float(t) for i, t in data.get("counted", {}).items()},
        terminating={
            i: Waiting(float(w["since"]), w.get("idle_since"))
            for i, w in data.get("terminating", {}).items()
        },
    )


def load(ctx: Context) -> ControllerState:
    path = ctx.path(CONTROLLER_STATE_PATH)
    return from_json(path.read_text()) if path.exists() else ControllerState()


def save(ctx: Context, state: ControllerState) -> None:
    write_atomic(ctx.path(CONTROLLER_STATE_PATH), to_json(state).encode(), 0o600)


@contextlib.contextmanager
def locked(ctx: Context) -> Iterator[bool]:
    """One pass at a time (the timer's and an operator's): yields False when another holds it."""
    path = ctx.path(CONTROLLER_STATE_PATH + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
