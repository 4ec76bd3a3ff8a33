"""handback: before the head's slurmctld starts (head_node.backup), a backup controller in control
is asked to save Slurm's state and stop, so that the head reads the whole of it.

Slurm's own handback loses jobs. A starting primary asks the backup for control
(REQUEST_CONTROL) and reads StateSaveLocation as soon as it has the reply; the backup replies
only when a fixed wait runs out (CONTROL_TIMEOUT - 1 s: the shutdown it waits for waits for the
thread that is waiting, src/slurmctld/proc_req.c, _slurm_rpc_request_control, "Old state
possible"), and saves its state after replying. So the primary reads while the backup writes:
state saved before the backup's last changes (a job it started is pending again), or no job
table at all (src/common/state_save.c renames job_state away before it renames the new one in;
a read between the two finds none, and without accounting slurmctld then starts with no job).
On real 26.05.5 daemons (tests/slurm/test_backup_controller.py) 3 handbacks of 7 lost a job
that way.

Here the head's ExecStartPre asks the backup in control to shut down (`scontrol shutdown
slurmctld`: it saves all its state, then exits), waits until it no longer answers, and only then
lets slurmctld start: the primary finds no backup to ask and reads the state the backup saved
last, whole. systemd starts the backup's slurmctld again (the drop-in's Restart=always), and it
finds the head in control and stands by. A backup not in control (the heartbeat in the shared
state is the head's, or stale) is left alone.
"""

from __future__ import annotations

from .. import active
from ..context import Context, log
from ..slurm import SCONTROL

# A backup saves its whole state and exits within seconds; beyond this (checks a second apart)
# the head starts anyway, and Slurm's own handback applies.
STOP_WAIT_SECONDS = 90
SCONTROL_SECONDS = 30


def backup_in_control(ctx: Context) -> bool:
    beat = active.heartbeat(ctx)
    return beat is not None and beat[1] == 1 and ctx.clock() - beat[0] <= active.SLURMCTLD_TIMEOUT


def backup_answers(ctx: Context) -> bool:
    """Whether `scontrol ping` finds the backup's slurmctld up (the head's is not started)."""
    out = ctx.bounded(SCONTROL_SECONDS, *SCONTROL, "ping").stdout or ""
    return any("(backup)" in line and line.endswith(" is UP") for line in out.splitlines())


def handback(ctx: Context) -> str:
    """What it did (for the journal): nothing off the head or without a backup in control."""
    config = ctx.config()
    if not config.backup or not config.is_head or active.controller_index(ctx) != 0:
        return "not the head of a cluster with a backup controller"
    if not backup_in_control(ctx):
        return "the backup is not in control"
    log("handback: the backup is in control: asking it to save Slurm's state and stop")
    # scontrol sends the shutdown to every backup first, then to the primary, and reports the
    # primary's answer (src/api/reconfigure.c, slurm_shutdown): with the head's slurmctld not
    # started, "Unable to contact slurm controller" is the expected answer. Whether the backup
    # stopped is what counts.
    asked = ctx.bounded(SCONTROL_SECONDS, *SCONTROL, "shutdown", "slurmctld")
    detail = (asked.stderr or asked.stdout or "").strip()
    waited = 0
    while backup_answers(ctx):
        if waited >= STOP_WAIT_SECONDS:
            log(
                f"handback: the backup's slurmctld still answers {waited} s after its shutdown "
                f"({detail or 'no answer'}): starting anyway (Slurm's own handback)"
            )
            return f"the backup did not stop within {waited} s"
        ctx.sleep(1)
        waited += 1
    log(f"handback: the backup stopped after {waited} s; its state is saved")
    return f"the backup stopped after {waited} s"
