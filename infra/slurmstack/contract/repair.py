"""The head controller's repair policy: what it does about each cause."""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["Remedy", "RepairPolicy", "RepairRule", "read_repair_policy", "repair_policy_data"]


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
    """The head controller's policy, rendered from the definition into the head's node.json."""

    rules: tuple[RepairRule, ...] = ()
    # The circuit breaker: at most this many replacements per pool in this many minutes; then
    # the pool's automatic replacement stops until an operator resets it.
    breaker_replacements: int = 3
    breaker_window_minutes: int = 60
    # A cause that comes back within this after the controller rebooted the node: replace.
    reboot_window_minutes: int = 1440
    # A Capacity Block's nodes are drained this long before EC2 starts terminating them.
    capacity_block_drain_minutes: int = 60
    # How long a terminating instance (scale-in, refresh, replacement) waits for its jobs.
    scale_in_wait_minutes: int = 120
    # How long it waits, once idle, for the node to copy its logs to the bucket.
    logs_wait_minutes: int = 5

    def remedy(self, cause: str) -> Remedy | None:
        for rule in self.rules:
            if rule.cause == cause:
                return rule.remedy
        return None


def repair_policy_data(policy: RepairPolicy) -> dict[str, Any]:
    data = {f.name: getattr(policy, f.name) for f in fields(policy) if f.name != "rules"}
    data["rules"] = [{"cause": r.cause, "remedy": r.remedy.value} for r in policy.rules]
    return data


def read_repair_policy(data: dict[str, Any]) -> RepairPolicy:
    values = {k: v for k, v in data.items() if k != "rules"}
    rules = tuple(RepairRule(str(r["cause"]), Remedy(r["remedy"])) for r in data["rules"])
    return RepairPolicy(rules=rules, **values)
