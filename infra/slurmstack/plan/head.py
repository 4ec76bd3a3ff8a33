"""What the plan decides about the head node, and how it recovers by itself (the alarms
slurmstack.stack.head_recovery makes, docs/head-failure.md)."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.catalog import InstanceFacts
from slurmstack.contract import SLURMCTLD_TIMEOUT_WITH_BACKUP_SECONDS
from slurmstack.spec import RootVolume


@dataclass(frozen=True)
class HeadPlan:
    instance_type: str
    facts: InstanceFacts
    ami: str | None  # the definition's own AMI for this node (slurmstack.plan.images decides)
    root_volume: RootVolume
    state_volume_gib: int
    auto_recovery: bool = True  # head_node.auto_recovery
    backup: bool = False  # head_node.backup: a standby controller, Slurm state on EFS


# head_node.backup: the backup takes control once the head's slurmctld has been silent this long
# (slurm.conf(5), SlurmctldTimeout; Slurm's default is 120 s). The backup pings every third of
# it and the head writes its heartbeat every quarter (backup.c, heartbeat.c), so takeover comes
# 60 to 80 s after the head stops. Shorter would risk a takeover while a busy head pauses (a
# large state save, a reconfigure); on real daemons here it took 10 to 13 s at a 10 s timeout
# (tests/slurm/test_backup_controller.py, docs/head-failure.md).
BACKUP_SLURMCTLD_TIMEOUT_SECONDS = SLURMCTLD_TIMEOUT_WITH_BACKUP_SECONDS
# One ping interval of the backup (SlurmctldTimeout / 3) past the timeout: the worst case.
BACKUP_TAKEOVER_SECONDS_MAX = BACKUP_SLURMCTLD_TIMEOUT_SECONDS * 4 // 3

# Both metrics are 0 or 1 each minute (EC2 status checks, basic monitoring).
STATUS_CHECK_PERIOD_SECONDS = 60


@dataclass(frozen=True)
class RecoveryAlarm:
    suffix: str  # of the alarm's name
    metric: str  # AWS/EC2 metric
    action: str  # EC2 action of CloudWatch (arn:...:automate:<region>:ec2:<action>)
    failed_minutes: int  # consecutive failed minutes before it acts
    why: str  # "{controller}": the head, or its backup controller (head_node.backup)

    def describe(self, controller: str) -> str:
        return self.why.format(controller=controller)


RECOVERY_ALARMS = (
    # Two minutes: one failed check can be a blip of the check itself; EC2's simplified
    # recovery acts on its own schedule, this one sooner and with a notification.
    RecoveryAlarm(
        "recover",
        "StatusCheckFailed_System",
        "recover",
        2,
        "the {controller}'s host failed: EC2 moves it to healthy hardware (same instance, "
        "address and volumes)",
    ),
    # Three minutes: a reboot loses the running slurmctld's memory (its state is saved on
    # the state volume every few seconds), so it waits a little longer than the recovery.
    RecoveryAlarm(
        "reboot",
        "StatusCheckFailed_Instance",
        "reboot",
        3,
        "the {controller}'s operating system stopped answering: EC2 reboots it",
    ),
)
