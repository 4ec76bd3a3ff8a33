"""What happens when the head node fails, for `plan` (docs/head-failure.md): the configuration
the definition chose, the recovery time of each configuration slurmstack offers with the basis
of every figure, and what the chosen one costs.

The head runs slurmctld, slurmdbd, the repair controller and the power programs. While it is
down, running jobs keep running (slurmd holds them and retries its messages to slurmctld), but
nothing new is scheduled, repaired or resumed. Recovery times are estimates: AWS publishes no
figure for how long moving an instance to new hardware takes, so those steps say what is
assumed."""

from __future__ import annotations

from typing import Any

from slurmstack.plan import ClusterPlan
from slurmstack.plan.head import RECOVERY_ALARMS, STATUS_CHECK_PERIOD_SECONDS
from slurmstack.report.cost import CostLine, hours_per_month, unit_price
from slurmstack.report.timing import HEAD_BOOT, Duration

# A recovered or rebooted head boots its own image again: no cloud-init run (user data runs on
# the first boot only), systemd starts munge, slurmdbd and slurmctld, which reads its state from
# the state volume.
HEAD_RESTART = Duration(
    120,
    "no AWS figure; 2 min assumed for the instance's reboot and slurmctld's start from its state",
)
HOST_MOVE = Duration(
    180,
    "EC2 moves the instance to a new host (EC2 User Guide, 'Automatic instance recovery': an "
    "unplanned reboot to the instance); AWS gives no time, 3 min assumed",
)
# Replacing the head by hand: `pulumi up --replace <head_node_urn>` (a stack output).
MANUAL_REPLACE = Duration(
    60 + HEAD_BOOT.seconds,
    "`pulumi up --replace` on the head: the old instance goes, a new one launches and boots "
    f"({HEAD_BOOT.basis}); the time until a person notices is not counted",
)


def _alarm_minutes(suffix: str) -> int:
    (alarm,) = [a for a in RECOVERY_ALARMS if a.suffix == suffix]
    return alarm.failed_minutes * STATUS_CHECK_PERIOD_SECONDS // 60


def _step(what: str, duration: Duration) -> dict[str, Any]:
    return {"what": what, "seconds": duration.seconds, "basis": duration.basis}


def _by_hand(failure: str) -> dict[str, Any]:
    """A failure nothing recovers from by itself: the head is replaced by hand."""
    return {
        "failure": failure,
        "seconds": None,
        "by_hand": [_step("pulumi up --replace <head_node_urn>", MANUAL_REPLACE)],
    }


def _timed(failure: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"failure": failure, "seconds": sum(s["seconds"] for s in steps), "steps": list(steps)}


def configurations() -> list[dict[str, Any]]:
    """Each configuration: what it recovers from by itself and in how long (seconds), step by
    step, each step with its basis."""
    recover, reboot = _alarm_minutes("recover"), _alarm_minutes("reboot")
    return [
        {
            "name": "none",
            "setting": "head_node.auto_recovery: false",
            "recovery": [_by_hand("any")],
        },
        {
            "name": "auto_recovery",
            "setting": "head_node.auto_recovery: true (the default)",
            "recovery": [
                _timed(
                    "host failure (system status check)",
                    _step("alarm", Duration(recover * 60, f"{recover} failed one-minute checks")),
                    _step("move to a new host", HOST_MOVE),
                    _step("boot, slurmctld up", HEAD_RESTART),
                ),
                _timed(
                    "hung operating system (instance status check)",
                    _step("alarm", Duration(reboot * 60, f"{reboot} failed one-minute checks")),
                    _step("reboot, slurmctld up", HEAD_RESTART),
                ),
                _by_hand("lost Availability Zone, terminated instance, broken image"),
            ],
        },
    ]


def head_failure_lines(plan: ClusterPlan) -> list[CostLine]:
    """What the chosen configuration costs: the topic's key always (alerts need it), the two
    alarms with auto_recovery."""
    key, key_source = unit_price("kms_key_usd_per_month")
    lines = [
        CostLine(
            "alert topic's KMS key",
            "monitoring",
            key / hours_per_month(),
            "1 key; rotation adds $1 a month for each of its first two yearly rotations",
            key_source,
        )
    ]
    if plan.head.auto_recovery:
        alarm, alarm_source = unit_price("cloudwatch_alarm_usd_per_month")
        lines.append(
            CostLine(
                "head node recovery alarms",
                "monitoring",
                len(RECOVERY_ALARMS) * alarm / hours_per_month(),
                f"{len(RECOVERY_ALARMS)} standard-resolution alarms",
                alarm_source,
            )
        )
    return lines


def head_failure_section(plan: ClusterPlan) -> dict[str, Any]:
    chosen = "auto_recovery" if plan.head.auto_recovery else "none"
    monthly = sum(line.monthly_usd or 0.0 for line in head_failure_lines(plan))
    return {
        "configuration": chosen,
        "alarms": [
            {"action": a.action, "metric": a.metric, "failed_minutes": a.failed_minutes}
            for a in RECOVERY_ALARMS
        ]
        if plan.head.auto_recovery
        else [],
        "monthly_usd": round(monthly, 2),
        "while_down": (
            "running jobs keep running (slurmd holds them); nothing is scheduled, repaired or "
            "resumed until it is back"
        ),
        "configurations": configurations(),
        "backup_controller": "not available yet: a second controller is open work (docs/head-failure.md)",
    }
