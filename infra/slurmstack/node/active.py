"""Which controller is in control (head_node.backup): the head's loops that must run once per
cluster (the repair controller, the elastic sweep, the accounting apply) ask before acting.

Slurm says it itself: the controller in control writes StateSaveLocation/heartbeat, on the file
system both controllers share, with its index in the SlurmctldHost list (contract.HEARTBEAT_PATH).
`scontrol ping` cannot tell: a backup in standby answers pings too. A heartbeat older than
SlurmctldTimeout, or none at all (a first boot, before slurmctld's first beat), leaves the
loops to the head, as without a backup: the backup acts only on a fresh heartbeat of its own,
and the head stands by only on one of the backup's. Both read the same file, so they never act
together."""

from __future__ import annotations

import struct

from ..contract import (
    HEARTBEAT_PATH,
    SLURMCTLD_TIMEOUT_WITH_BACKUP_SECONDS,
    backup_host,
)
from .context import AgentError, Context

SLURMCTLD_TIMEOUT = SLURMCTLD_TIMEOUT_WITH_BACKUP_SECONDS

HEARTBEAT = struct.Struct(">QQ")  # time, controller index


def controller_index(ctx: Context) -> int:
    """0 on the head, 1 on the backup (its name, given by `params`, says which)."""
    return 1 if ctx.node_env().node_name == backup_host(ctx.config().cluster) else 0


def on_backup(ctx: Context) -> bool:
    """Whether this node is the backup controller (False where node.json cannot be read)."""
    try:
        return ctx.config().backup and controller_index(ctx) == 1
    except (AgentError, OSError):
        return False


def heartbeat(ctx: Context) -> tuple[float, int] | None:
    """(time, index) the controller in control last wrote, or None without a readable one."""
    try:
        data = ctx.path(HEARTBEAT_PATH).read_bytes()
    except OSError:
        return None
    if len(data) < HEARTBEAT.size:
        return None
    written, index = HEARTBEAT.unpack_from(data)
    return float(written), int(index)


def standby_reason(ctx: Context) -> str | None:
    """Why this node must not run a once-per-cluster loop now, or None when it may: always
    None without a backup controller, and on a node whose node.json cannot be read (the command
    meets what it lacks itself)."""
    try:
        if not ctx.config().backup:
            return None
    except (AgentError, OSError):
        return None
    here = controller_index(ctx)
    beat = heartbeat(ctx)
    age = ctx.clock() - beat[0] if beat else None
    in_control = beat[1] if beat and age is not None and age <= SLURMCTLD_TIMEOUT else 0
    if in_control == here:
        return None
    if here:
        seen = f"heartbeat {age:.0f} s ago" if age is not None else "no heartbeat yet"
        return f"the head acts unless the backup's own heartbeat is fresh ({seen})"
    return f"the backup is in control (heartbeat {age:.0f} s ago)"
