"""What the plan decides about health and repair: the checks each node runs, and the head
controller's policy, above all its reason -> action table. Policy is data: the table lives in
slurmstack.rules.health_policy, the definition's overrides apply here, the result is rendered into
node.json (slurmstack.render.node), and docs/reference/repair-table.md quotes it (tools/docs.py)."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.contract import Check, Health, RepairPolicy, RepairRule
from slurmstack.contract import Remedy as R
from slurmstack.rules.health_policy import CAUSES, CRITICAL_XIDS
from slurmstack.spec import HealthSpec, XidHandling

# A cause back within this after the controller rebooted a node for it: the node is replaced.
REBOOT_WINDOW_MINUTES = 24 * 60
# `scontrol reboot`: how long a rebooting node may take to come back before slurmctld marks it
# DOWN (ResumeTimeout, which also bounds a reboot). A GPU instance boots in minutes (driver,
# EFA, RAID over NVMe, mounts); half an hour leaves room.
REBOOT_TIMEOUT_SECONDS = 1800
# How long the controller waits, once a terminating node is idle, for its logs to reach the
# bucket (the node copies them on its next health check, within check_interval_seconds).
LOGS_WAIT_MINUTES = 5


@dataclass(frozen=True)
class HealthPlan:
    check_interval_seconds: int
    deep_diagnostic: bool
    disk_full_percent: int
    repair: RepairPolicy
    draining_xids: frozenset[int]  # the table's and the definition's, less those it ignores

    @property
    def critical_xids(self) -> tuple[int, ...]:
        """The XIDs that drain a node, those the policy replaces for first: a node names the
        first it found in this order in its one reason, so the worst wins."""
        remedy = {r.cause: r.remedy for r in self.repair.rules}
        rank = {R.REPLACE: 0, R.REBOOT: 1, R.LEAVE: 2}
        return tuple(sorted(self.draining_xids, key=lambda n: (rank[remedy[xid_cause(n)]], n)))

    def node_health(self, gpus: int, neuron_devices: int, efa_devices: int) -> Health:
        """What a node with these devices checks (node.json's ``health``)."""
        return Health(
            gpus=gpus,
            neuron_devices=neuron_devices,
            efa_devices=efa_devices,
            critical_xids=self.critical_xids if gpus else (),
            disk_full_percent=self.disk_full_percent,
            deep_diagnostic=self.deep_diagnostic and gpus > 0,
        )


def xid_cause(number: int) -> str:
    return f"{Check.GPU_XID.value}:{number}"


def repair_rules(
    overrides: dict[str, R], xids: dict[int, XidHandling] | None = None
) -> tuple[RepairRule, ...]:
    """The table, the definition's overrides applied (the checks refuse unknown causes and
    contradictions: what is left are the XIDs the definition adds), then those added."""
    overrides = dict(overrides)
    for number, handling in (xids or {}).items():
        if handling is not XidHandling.IGNORE:
            overrides[xid_cause(number)] = R(handling.value)
    rules = [RepairRule(c.cause, overrides.pop(c.cause, c.remedy)) for c in CAUSES]
    added = sorted(overrides.items(), key=lambda item: int(item[0].rsplit(":", 1)[1]))
    return tuple(rules) + tuple(RepairRule(cause, remedy) for cause, remedy in added)


def draining_xids(xids: dict[int, XidHandling]) -> frozenset[int]:
    """The table's XIDs and the definition's, less those it ignores."""
    numbers = {x.number for x in CRITICAL_XIDS} | set(xids)
    return frozenset(n for n in numbers if xids.get(n) is not XidHandling.IGNORE)


def plan_health(spec: HealthSpec) -> HealthPlan:
    return HealthPlan(
        check_interval_seconds=spec.check_interval_seconds,
        deep_diagnostic=spec.deep_diagnostic,
        disk_full_percent=spec.disk_full_percent,
        draining_xids=draining_xids(dict(spec.xids)),
        repair=RepairPolicy(
            rules=repair_rules(dict(spec.actions), dict(spec.xids)),
            breaker_replacements=spec.breaker.replacements,
            breaker_window_minutes=spec.breaker.window_minutes,
            reboot_window_minutes=REBOOT_WINDOW_MINUTES,
            capacity_block_drain_minutes=spec.capacity_block_drain_minutes,
            scale_in_wait_minutes=spec.scale_in_wait_minutes,
            logs_wait_minutes=LOGS_WAIT_MINUTES,
        ),
    )
