"""Volumes: every shared file system answers within a timeout (a hung Lustre or NFS mount makes
stat hang, so it runs bounded); the root volume and local scratch are not nearly full."""

from __future__ import annotations

import os

from ...contract import Check, Mount, NodeConfig
from ..context import Context
from ..system import mounted
from .findings import Finding


def file_system_findings(ctx: Context, mounts: tuple[Mount, ...], seconds: float) -> list[Finding]:
    found = []
    for mount in mounts:
        if not mounted(ctx, mount.path):
            found.append(Finding(Check.FILE_SYSTEM, f"{mount.path} ({mount.kind}) is not mounted"))
            continue
        result = ctx.bounded(seconds, "stat", "-f", "-c", "%T", mount.path)
        if result.returncode != 0:
            found.append(
                Finding(
                    Check.FILE_SYSTEM,
                    f"{mount.path} ({mount.kind}) did not answer within {seconds:g} s",
                )
            )
    return found


def used_percent(path: str) -> float:
    """As df counts: used over what non-root users could have (used + available)."""
    stats = os.statvfs(path)
    used = (stats.f_blocks - stats.f_bfree) * stats.f_frsize
    usable = used + stats.f_bavail * stats.f_frsize
    return 100.0 * used / usable if usable else 0.0


def disk_findings(ctx: Context, config: NodeConfig) -> list[Finding]:
    paths = ["/"] + ([config.scratch.mount] if config.scratch is not None else [])
    limit = config.health.disk_full_percent
    found = []
    for path in paths:
        local = ctx.path(path)
        if not local.exists():
            continue
        used = used_percent(str(local))
        if used >= limit:
            found.append(Finding(Check.DISK_FULL, f"{path} is {used:.0f}% full (limit {limit}%)"))
    return found
