"""What a controller pass decides: its actions (each a kind and what it is about), the decision
(the actions and the memory after them), and the pass itself as decide and its repair rules
build it."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass

from ...contract import PoolRef, RepairPolicy
from .observe import Observed
from .state import ControllerState

SUSPENDED_PROCESS = "ReplaceUnhealthy"
# At most this many changes per pass; the rest waits for the next one.
MAX_ACTIONS = 200


class Kind(enum.StrEnum):
    DRAIN = "drain"
    DOWN = "down"
    REBOOT = "reboot"
    REPLACE = "replace"
    HOLD = "hold"  # the reason says the breaker holds the node's replacement
    REAP = "reap"
    HEARTBEAT = "heartbeat"
    COMPLETE = "complete"
    SUSPEND = "suspend"  # the pool's group stops replacing Unhealthy instances (breaker)


@dataclass(frozen=True)
class Action:
    kind: Kind
    node: str = ""
    reason: str = ""
    instance: str = ""
    group: str = ""
    pool: str = ""
    why: str = ""


@dataclass(frozen=True)
class Decision:
    actions: tuple[Action, ...]
    state: ControllerState
    notes: tuple[str, ...]


def iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@dataclass
class Pass:
    """One decision pass: the actions so far and the memory as it changes."""

    observed: Observed
    pools: tuple[PoolRef, ...]
    policy: RepairPolicy
    state: ControllerState
    actions: list[Action]
    notes: list[str]

    @property
    def now(self) -> float:
        return self.observed.now

    def add(self, action: Action) -> None:
        self.actions.append(action)
