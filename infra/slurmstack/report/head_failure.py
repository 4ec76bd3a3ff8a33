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
from slurmstack.plan.head import (
    BACKUP_SLURMCTLD_TIMEOUT_SECONDS,
    BACKUP_TAKEOVER_SECONDS_MAX,
    RECOVERY_ALARMS,
    STATUS_CHECK_PERIOD_SECONDS,
)
from slurmstack.report.cost import (
    CostLine,
    gp3_hourly,
    hours_per_month,
    instance_price,
    unit_price,
)
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


# The backup's takeover (head_node.backup): SlurmctldTimeout of silence, then at most one of the
# backup's pings (every SlurmctldTimeout / 3 s), then it reads the state from EFS and serves.
TAKEOVER = Duration(
    BACKUP_TAKEOVER_SECONDS_MAX,
    f"SlurmctldTimeout {BACKUP_SLURMCTLD_TIMEOUT_SECONDS} s plus one ping interval "
    f"({BACKUP_SLURMCTLD_TIMEOUT_SECONDS // 3} s; backup.c); measured here on real slurmctld "
    "at a 10 s timeout: 10-13 s, so the bound holds (docs/head-failure.md)",
)
STATE_LOAD = Duration(
    10,
    "the backup reads the saved state from EFS and starts serving; 1-3 s here from a local "
    "directory, 10 s assumed for EFS and a large queue (not measured on AWS)",
)
# Taking control, the backup's slurmctld connects to slurmdbd before it serves (controller.c:
# ctld_assoc_mgr_init before read_slurm_conf and heartbeat_start), trying the head's first:
# from a dead head instance no answer comes, only the connection's timeout.
DBD_FAILOVER = Duration(
    30,
    "with accounting, when the head's instance is gone: the head's slurmdbd is tried first, "
    "assumed one MessageTimeout (30 s); 19-20 s measured on the virtual cluster "
    "(tests/vcluster/test_ha.py), not measured on AWS",
)
# A returning head first has the backup save Slurm's state and stop (its slurmctld unit's
# handback step: Slurm's own handback waits CONTROL_TIMEOUT and races the backup's last save,
# slurmstack.node.boot.handback), then starts and reads the state.
HANDBACK = Duration(
    15,
    "the backup saves its state and stops (about 1 s on real 26.05 and 24.11 daemons, "
    "tests/slurm/test_backup_controller.py), then the head reads the state (10 s assumed for "
    "EFS, as at takeover; not measured on AWS)",
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
        {
            "name": "backup_controller",
            "setting": "head_node.backup: true (with auto_recovery for the head itself)",
            "recovery": [
                _timed(
                    "head down for any reason (host, OS, slurmctld, terminated)",
                    _step("backup takes control", TAKEOVER),
                    _step("slurmdbd reached (the head's tried first)", DBD_FAILOVER),
                    _step("state read, scheduling again", STATE_LOAD),
                ),
                _timed(
                    "head back (recovered, rebooted or replaced)",
                    _step("control handed back", HANDBACK),
                ),
                _by_hand("lost Availability Zone (both controllers are in the cluster's subnet)"),
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
    if plan.head.backup:
        head = plan.head
        price, source, note = instance_price(head.instance_type, plan, head.facts.price)
        lines.append(
            CostLine(
                f"backup controller: {head.instance_type}",
                "compute",
                price,
                "1 × on-demand, the head's type",
                source,
                note,
            )
        )
        _, ebs_source = unit_price("gp3_usd_per_gb_month")
        lines.append(
            CostLine(
                "backup controller: root volume",
                "storage",
                gp3_hourly(head.root_volume, head.root_volume.size_gib),
                f"{head.root_volume.size_gib} GiB gp3",
                ebs_source,
            )
        )
    if plan.head.auto_recovery:
        alarm, alarm_source = unit_price("cloudwatch_alarm_usd_per_month")
        # The same two on the backup controller's instance.
        count = len(RECOVERY_ALARMS) * (2 if plan.head.backup else 1)
        lines.append(
            CostLine(
                "controller recovery alarms" if plan.head.backup else "head node recovery alarms",
                "monitoring",
                count * alarm / hours_per_month(),
                f"{count} standard-resolution alarms",
                alarm_source,
            )
        )
    return lines


def chosen_configuration(plan: ClusterPlan) -> str:
    if plan.head.backup:
        return "backup_controller"
    return "auto_recovery" if plan.head.auto_recovery else "none"


def head_failure_section(plan: ClusterPlan) -> dict[str, Any]:
    chosen = chosen_configuration(plan)
    monthly = sum(line.monthly_usd or 0.0 for line in head_failure_lines(plan))
    return {
        "configuration": chosen,
        "alarms": [
            {
                "controller": controller,
                "action": a.action,
                "metric": a.metric,
                "failed_minutes": a.failed_minutes,
            }
            for controller in (["head", "backup"] if plan.head.backup else ["head"])
            for a in RECOVERY_ALARMS
        ]
        if plan.head.auto_recovery
        else [],
        "monthly_usd": round(monthly, 2),
        "while_down": (
            "running jobs keep running (slurmd holds them); nothing is scheduled, repaired or "
            + (
                "resumed until the backup has taken control"
                if plan.head.backup
                else "resumed until it is back"
            )
        ),
        "configurations": configurations(),
    }
