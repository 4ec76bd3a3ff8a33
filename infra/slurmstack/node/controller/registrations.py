"""With a backup controller (head_node.backup): nodes that registered since Slurm last saved its
node state are saved now, so that a takeover finds them.

slurmctld saves its node table when something schedules a node save (a job's start or end, an
`scontrol update node`, ...) and in full every 5 minutes (PERIODIC_CHECKPOINT, controller.c);
a node's registration, even a dynamic node's creation, schedules none (proc_req.c,
_slurm_rpc_node_registration, 24.11 and 26.05). A backup that takes control reads the node
table from the shared state: a dynamic node that registered after the last save is unknown to
it, and its slurmd, which registers only when it starts, never tells it. Seen on the virtual
cluster: "No nodes in the system" under the backup of a cluster whose nodes had just booted.

The controller's pass (every minute, on the controller in control) compares each node's
SlurmdStartTime with the node table's file time and, for the nodes newer than it, sends one
update that changes nothing (a node's Weight set to its own value): every update_node RPC
schedules a node save (_slurm_rpc_update_node)."""

from __future__ import annotations

from ...contract import STATE_SAVE_LOCATION
from ..context import Context, log
from ..slurm import SCONTROL, NodeRecord

NODE_STATE_FILE = f"{STATE_SAVE_LOCATION}/node_state"


def save_new_registrations(ctx: Context, records: tuple[NodeRecord, ...]) -> list[str]:
    """The nodes that started after the node table was last saved; a save asked for when there
    are any. Nothing without a backup controller."""
    if not ctx.config().backup:
        return []
    try:
        saved = ctx.path(NODE_STATE_FILE).stat().st_mtime
    except OSError:
        saved = 0.0
    newer = [r for r in records if (r.time("SlurmdStartTime") or 0.0) > saved]
    if not newer:
        return []
    first = newer[0]
    weight = first.fields.get("Weight", "1")
    result = ctx.sh(*SCONTROL, "update", f"nodename={first.name}", f"weight={weight}", check=False)
    if result.returncode != 0:
        log(f"control: asking for a node state save failed: {result.stderr.strip()}")
        return []
    return [r.name for r in newer]
