"""state-volume (head): the Slurm state EBS volume: found, formatted once, mounted; with a
backup controller (head_node.backup), the state EFS file system both controllers mount there
instead."""

from __future__ import annotations

import os
from pathlib import Path

from ...contract import DeployParameter, MountKind
from .. import system
from ..context import AgentError, Context
from .mounts import EFS_OPTIONS, require_mount_helper

EBS_MODEL = "Amazon Elastic Block Store"


def _read_strip(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


def state_volume_device(ctx: Context) -> str | None:
    """The state volume's NVMe disk: the EBS disk whose serial is the volume id without
    its dash (the stack publishes the id); without the id, the one EBS disk that is
    neither the root disk nor in use."""
    volume = ctx.get_parameter(DeployParameter.STATE_VOLUME_ID)
    block = ctx.path("/sys/block")
    candidates = []
    for entry in sorted(block.iterdir()) if block.is_dir() else []:
        device = entry / "device"
        if _read_strip(device / "model") != EBS_MODEL:
            continue
        if volume:
            if _read_strip(device / "serial") == volume.replace("-", ""):
                return f"/dev/{entry.name}"
            continue
        partitions = [p for p in entry.iterdir() if p.name.startswith(entry.name + "p")]
        in_use = partitions or any((entry / "holders").glob("*"))
        if not in_use and system.mount_point_of(ctx, f"/dev/{entry.name}") is None:
            candidates.append(f"/dev/{entry.name}")
    return candidates[0] if len(candidates) == 1 else None


def state_volume(ctx: Context, timeout: float = 900.0, poll: float = 5.0) -> str:
    """The stack attaches the volume after the instance exists: wait for it."""
    spec = ctx.config().state_volume
    if spec is None:
        raise AgentError("node.json names no state volume: run state-volume on the head node")
    mount, state_dir = spec.mount, spec.state_dir
    if spec.on_efs:
        return state_efs(ctx, mount, state_dir, timeout, poll)
    waited = 0.0
    device = state_volume_device(ctx)
    while device is None:
        if waited >= timeout:
            raise AgentError("the Slurm state volume was not attached in time")
        ctx.sleep(poll)
        waited += poll
        device = state_volume_device(ctx)
    if ctx.sh("blkid", device, check=False).returncode != 0:
        ctx.sh("mkfs.ext4", "-q", "-L", "slurm-state", device)
    uuid = ctx.sh("blkid", "-s", "UUID", "-o", "value", device).stdout.strip()
    system.fstab(ctx, f"UUID={uuid}", mount, "ext4", "defaults,noatime,nofail")
    if not system.mounted(ctx, mount):
        system.mkdir(ctx, mount)
        ctx.sh("mount", mount)
    system.mkdir(ctx, state_dir)
    uid, gid = ctx.owner("slurm")
    os.chown(ctx.path(state_dir), uid, gid)
    os.chmod(ctx.path(state_dir), 0o700)
    return device


def state_efs(ctx: Context, mount: str, state_dir: str, timeout: float, poll: float) -> str:
    """The state EFS file system at ``mount``: the same Slurm state on both controllers. Not
    `nofail` and no retry loop of its own: slurmctld's unit requires the mount, and a controller
    that started on an empty local directory would take control with no jobs and no nodes."""
    require_mount_helper(ctx, MountKind.EFS)
    file_system = ctx.wait_parameter(DeployParameter.STATE_EFS_ID, timeout, poll)
    system.fstab(ctx, f"{file_system}:/", mount, "efs", f"{EFS_OPTIONS},_netdev")
    if not system.mounted(ctx, mount):
        system.mkdir(ctx, mount)
        system.retry(ctx, ["mount", mount], 30, poll)
    # The first controller up makes the directory; the second finds it.
    system.mkdir(ctx, state_dir)
    uid, gid = ctx.owner("slurm")
    os.chown(ctx.path(state_dir), uid, gid)
    os.chmod(ctx.path(state_dir), 0o700)
    return f"{file_system}:/"
