"""job-dirs: the directories jobs write to that must exist before the first job.

On a pool's node (before every slurmd start, after the scratch is mounted: a stopped and
started instance gets a blank scratch, and /run is new at every boot): enroot's runtime
directory and its data, cache and temporary directories on the container root. On the head
(after the shared file systems are mounted): the example jobs' checkpoint directory on Lustre.
All world-writable and sticky, as /tmp: enroot, and the jobs, make a directory per user in
them; nobody removes another user's.
"""

from __future__ import annotations

import os

from ...contract import (
    CHECKPOINTS_DIR_NAME,
    ENROOT_RUNTIME_DIR,
    ENROOT_SUBDIRS,
    MountKind,
    container_root,
)
from .. import system
from ..context import AgentError, Context

SHARED_STICKY = 0o1777


def _sticky(ctx: Context, node_path: str) -> None:
    path = ctx.path(node_path)
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, SHARED_STICKY)


def job_dirs(ctx: Context) -> list[str]:
    config = ctx.config()
    made: list[str] = []
    if config.is_head:
        for mount in config.mounts:
            if mount.kind is MountKind.LUSTRE:
                if not system.mounted(ctx, mount.path):
                    raise AgentError(f"{mount.path} is not mounted: run `slurmstack-node mounts`")
                made.append(f"{mount.path}/{CHECKPOINTS_DIR_NAME}")
    else:
        root = container_root(config.scratch.mount if config.scratch else None)
        made += [ENROOT_RUNTIME_DIR, *(f"{root}/{d}" for d in ENROOT_SUBDIRS)]
    for node_path in made:
        _sticky(ctx, node_path)
    return made
