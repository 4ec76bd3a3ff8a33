"""full_save: a new cluster's slurmctld is asked once for a full state save, so a controller that
dies in its first five minutes does not leave one that can never start again.

From Slurm 25.05 on, slurmctld refuses to start (fatal) when its state directory has the
cluster's name but lacks one of its core state files: job, node, reservation, trigger and
federation state, and the associations' usage (SchedMD commit 4344e6addc, "fatal() on startup
if a core state file doesn't exist", issue 50162; src/common/assoc_mgr.c load_assoc_usage,
src/slurmctld/job_mgr.c load_all_job_state, 26.05). A new cluster's slurmctld writes the name
at once but some of those files only at its first full save, 300 s after it starts
(PERIODIC_CHECKPOINT, controller.c), or when it shuts down cleanly. A head that dies before
then (an instance failure, EC2's recovery, the OOM killer) leaves a state directory no
slurmctld accepts: the backup's takeover fails at once ("fatal: No Assoc usage file ... to
recover", seen on the virtual cluster with 26.05.5) and so does every restart of the head's,
until someone starts it with -i. `scontrol reconfigure` saves every state file before the new
slurmctld takes over (controller.c: SIGHUP or the RPC sets reconfig and shuts the old process
down through save_all_state), so the head's boot asks for one right after slurmctld's first
start (`slurmstack-node full-save`), and the controller's pass, on the controller in control,
asks again while a file is missing: the window shrinks to the seconds before that step.
"""

from __future__ import annotations

from ...contract import FULL_SAVE_ASKED_PATH, STATE_SAVE_LOCATION
from ..context import Context, log, write_atomic
from .act import scontrol

# The files slurmctld 25.05+ cannot start without once the cluster's name is there.
CORE_STATE_FILES = (
    "job_state",
    "node_state",
    "resv_state",
    "trigger_state",
    "fed_mgr_state",
    "assoc_usage",
)
CLUSTER_NAME_FILE = "clustername"
# Asked again at most this often (slurmctld's own full save comes this often: a release whose
# reconfigure writes no file must not be reconfigured every pass).
ASK_AGAIN_SECONDS = 300
# At boot, slurmctld has just started: it writes the cluster's name and answers RPCs within
# seconds (checks a second apart).
BOOT_WAIT_SECONDS = 60


def missing_core_files(ctx: Context) -> list[str]:
    """The core state files absent from a state directory that has the cluster's name (an
    empty list for a directory slurmctld has not written yet: its first start is fine)."""
    state = ctx.path(STATE_SAVE_LOCATION)
    if not (state / CLUSTER_NAME_FILE).exists():
        return []
    return [name for name in CORE_STATE_FILES if not (state / name).exists()]


def asked_recently(ctx: Context, now: float) -> bool:
    try:
        last = float(ctx.path(FULL_SAVE_ASKED_PATH).read_text())
    except (OSError, ValueError):
        return False
    return now - last < ASK_AGAIN_SECONDS


def ask_for_full_save(ctx: Context, now: float) -> list[str] | None:
    """The core files that were missing when a full save was asked for; None when none was."""
    missing = missing_core_files(ctx)
    if not missing:
        return None
    if asked_recently(ctx, now):
        return None
    try:
        scontrol(ctx, "reconfigure")
    except RuntimeError as exc:
        log(f"control: asking slurmctld for a full state save failed: {exc}")
        return None
    write_atomic(ctx.path(FULL_SAVE_ASKED_PATH), f"{now}\n".encode(), 0o600)
    log(f"control: slurmctld asked for a full state save ({', '.join(missing)} missing)")
    return missing


def full_save_at_boot(ctx: Context) -> list[str] | None:
    """The boot step, right after slurmctld's start: waits (at most BOOT_WAIT_SECONDS) for
    slurmctld to have written the cluster's name and to take the request, then asks as a pass
    does. A state directory slurmctld had written in full before returns at once."""
    state = ctx.path(STATE_SAVE_LOCATION)
    for _ in range(BOOT_WAIT_SECONDS):
        if (state / CLUSTER_NAME_FILE).exists():
            now = float(ctx.clock())
            if not missing_core_files(ctx) or asked_recently(ctx, now):
                return None
            asked = ask_for_full_save(ctx, now)
            if asked is not None:
                return asked
        ctx.sleep(1)
    log(f"full-save: slurmctld did not take a full save within {BOOT_WAIT_SECONDS} s")
    return None
