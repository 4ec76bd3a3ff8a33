"""What the plan decides about Slurm beyond one pool: MaxNodeCount, GresTypes, the
definition's extra slurm.conf keys."""

from __future__ import annotations

import math
from collections.abc import Iterable

from slurmstack.slurm_releases import version_key
from slurmstack.spec import ClusterSpec, PoolSpec

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


def slurm_max_node_count(dynamic_nodes: int, cloud_nodes: int = 0) -> int:
    """MaxNodeCount: the pools' always-on (dynamic) nodes twice (see MAX_NODE_COUNT_FACTOR),
    plus their elastic (CLOUD) nodes once, rounded up to a multiple of MAX_NODE_COUNT_STEP.
    slurmctld sizes its node table by MaxNodeCount, and the nodes slurm.conf declares (the
    CLOUD ones) take their places in it first (read_config.c, Slurm 23.11), so dynamic nodes
    get what is left. A CLOUD node keeps its name when its instance is replaced: once is
    enough."""
    wanted = max(dynamic_nodes * MAX_NODE_COUNT_FACTOR + cloud_nodes, 1)
    return math.ceil(wanted / MAX_NODE_COUNT_STEP) * MAX_NODE_COUNT_STEP


# Slurm's power saving for the elastic nodes (slurm.conf's ResumeTimeout, SuspendTimeout).
# ResumeTimeout: from the resume request to the node's registration. A GPU node's launch and
# boot take about 8 minutes (slurmstack.report.timing: NODE_BOOT and JOIN); 30 minutes leaves
# room for a slow image, a busy Lustre and a Capacity Block's first launch, while a node that
# never comes (a failed boot) is given up in half an hour: DOWN, its job requeued.
RESUME_TIMEOUT_SECONDS = 1800
# SuspendTimeout: from the suspend request until the node may be resumed again. EC2 takes
# about a minute to terminate an instance (a Capacity Block's slot is reusable some minutes
# later, which a failed launch and its retry cover).
SUSPEND_TIMEOUT_SECONDS = 120


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


# --- which Slurm runs where (slurm.version, pools[].slurm_version) ---------------------------


def pool_slurm_version(spec: ClusterSpec, pool: PoolSpec) -> str:
    """The Slurm a pool's nodes run: its own release during a staged upgrade, else the head's."""
    return pool.slurm_version or spec.slurm.version


def oldest_slurm_version(spec: ClusterSpec) -> str:
    """The oldest Slurm any daemon of the cluster runs. slurm.conf is written for it: every
    slurmd reads the whole file (configless, from slurmctld) and refuses keys its release does
    not know, so during a staged upgrade the older nodes' release decides what it may hold, and
    during a refresh to a new release, slurm.upgrade_from's (the nodes not refreshed yet)."""
    versions = [spec.slurm.version, *(pool_slurm_version(spec, p) for p in spec.pools)]
    # During an upgrade the nodes not yet refreshed still run slurm.upgrade_from's release.
    if spec.slurm.upgrade_from is not None:
        versions.append(spec.slurm.upgrade_from)
    return min(versions, key=version_key)
