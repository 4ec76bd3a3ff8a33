"""What the plan decides about Slurm beyond one pool: MaxNodeCount, GresTypes, the
definition's extra slurm.conf keys."""

from __future__ import annotations

import math
from collections.abc import Iterable

from slurmstack.spec import ClusterSpec

# MaxNodeCount headroom. A replacement instance usually gets a new private address, so it
# registers as a new dynamic node while the record of the instance it replaces lives on:
# slurmctld marks it DOWN ("Not responding") after SlurmdTimeout, or the head node's controller
# (slurmstack-controller.timer, every CONTROLLER_INTERVAL_SECONDS) as soon as its instance is
# gone, and the controller deletes it once it has been DOWN for REAPER_GRACE_SECONDS (both in
# slurmstack.contract),
# unless a job, a reservation, an operator's reason or a live instance at its address holds
# it. Until then, and during an instance refresh of a whole pool, every node can exist twice.
# The count is rounded up to a multiple of MAX_NODE_COUNT_STEP because MaxNodeCount only takes
# effect when slurmctld restarts: small resizes keep it.
MAX_NODE_COUNT_FACTOR = 2
MAX_NODE_COUNT_STEP = 64


def slurm_max_node_count(nodes_at_full_size: int) -> int:
    """MaxNodeCount: every pool at full size, twice (see MAX_NODE_COUNT_FACTOR), rounded up
    to a multiple of MAX_NODE_COUNT_STEP."""
    wanted = max(nodes_at_full_size * MAX_NODE_COUNT_FACTOR, 1)
    return math.ceil(wanted / MAX_NODE_COUNT_STEP) * MAX_NODE_COUNT_STEP


def gres_types(gres_names: Iterable[str]) -> tuple[str, ...]:
    """GresTypes: gpu always (so a pool of GPUs can be added by reconfiguring), plus the
    other accelerator kinds the pools have."""
    return tuple(sorted(set(gres_names) | {"gpu"}))


def slurm_settings(spec: ClusterSpec) -> tuple[tuple[str, str], ...]:
    """The definition's extra slurm.conf keys, in the order written (appended last)."""
    out: list[tuple[str, str]] = []
    for key, value in spec.slurm.settings.items():
        if isinstance(value, bool):
            out.append((key, "YES" if value else "NO"))
        else:
            out.append((key, str(value)))
    return tuple(out)
