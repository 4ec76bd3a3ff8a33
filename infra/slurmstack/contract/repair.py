"""The head controller's repair policy: what it does about each cause."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Remedy", "RepairPolicy", "RepairRule"]


class Remedy(enum.StrEnum):
    """What the controller does about a cause (slurmstack.plan.health holds the table)."""

    REBOOT = "reboot"  # scontrol reboot ASAP nextstate=RESUME: after the node's jobs end
    REPLACE = "replace"  # the node DOWN (its jobs requeued), its instance Unhealthy in its group
    LEAVE = "leave"  # nothing: the reason stays for an operator


@dataclass(frozen=True)
class RepairRule:
    cause: str  # a check (``gpu-count``), an XID (``gpu-xid:79``), ``slurm:<reason>``, ``Action:X``
    remedy: Remedy


@dataclass(frozen=True)
class RepairPolicy:
    """The head controller's policy, rendered from the definition into the head's node.json
    (slurmstack.plan.health sets every field: the defaults are the definition's)."""

    rules: tuple[RepairRule, ...]
    # The circuit breaker: at most this many replacements per pool in this many minutes; then
    # the pool's automatic replacement stops until an operator resets it.
    breaker_replacements: int
    breaker_window_minutes: int
    # A cause that comes back within this after the controller rebooted the node: replace.
    reboot_window_minutes: int
    # A Capacity Block's nodes are drained this long before EC2 starts terminating them.
    capacity_block_drain_minutes: int
    # How long a terminating instance (scale-in, refresh, replacement) waits for its jobs.
    scale_in_wait_minutes: int
    # How long it waits, once idle, for the node to copy its logs to the bucket.
    logs_wait_minutes: int

    def remedy(self, cause: str) -> Remedy | None:
        for rule in self.rules:
            if rule.cause == cause:
                return rule.remedy
        return None
