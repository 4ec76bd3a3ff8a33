"""scratch: RAID0 over the instance-store NVMe disks, mounted at the pool's scratch path and kept
there across reboots.

First boot: the array is made, formatted and mounted, and /etc/fstab names its file system
(nofail: a missing array never stops the boot). A reboot keeps the disks' data: mdadm assembles
the array again (often under another name, /dev/md127) and systemd mounts it from fstab. A
stop and start gives blank disks: the fstab entry finds nothing and the step, run again before
every slurmd start, makes the array anew. When no scratch can be mounted the step fails, and
slurmd does not start: a job never writes the node's scratch onto its root volume.
"""

from __future__ import annotations

from .. import system
from ..context import AgentError, Context, log

INSTANCE_STORE_MODEL = "Amazon EC2 NVMe Instance Storage"
SCRATCH_MD = "/dev/md/slurmstack-scratch"
SCRATCH_LABEL = "scratch"
# A boot whose array is gone (stop and start) gives up on the fstab entry after this long.
FSTAB_OPTIONS = "noatime,nofail,x-systemd.device-timeout=10s"


def instance_store_disks(ctx: Context) -> list[str]:
    block = ctx.path("/sys/block")
    disks = []
    for entry in sorted(block.iterdir()) if block.is_dir() else []:
        model = entry / "device" / "model"
        if model.exists() and model.read_text().strip() == INSTANCE_STORE_MODEL:
            disks.append(entry.name)
    return disks


def scratch(ctx: Context) -> str | None:
    scratch = ctx.config().scratch
    if scratch is None:
        return None
    mount = scratch.mount
    if system.mounted(ctx, mount):
        return mount
    disks = instance_store_disks(ctx)
    if not disks:
        raise AgentError(
            f"no instance-store NVMe disks for {mount}: not mounted, so slurmd stays off "
            "rather than let jobs fill the root volume"
        )
    busy = [d for d in disks if any((ctx.path("/sys/block") / d / "holders").glob("*"))]
    if busy:
        holder = next((ctx.path("/sys/block") / busy[0] / "holders").iterdir()).name
        source = system.mount_point_of(ctx, f"/dev/{holder}")
        if source is not None:
            # The image already assembled and mounted the disks (the Deep Learning AMI at
            # /opt/dlami/nvme): reuse that file system rather than destroy it.
            system.mkdir(ctx, mount)
            ctx.sh("mount", "--bind", source, mount)
            system.fstab(
                ctx, source, mount, "none", f"bind,nofail,x-systemd.requires-mounts-for={source}"
            )
            return mount
        device = f"/dev/{holder}"
        label = ctx.sh("blkid", "-s", "LABEL", "-o", "value", device, check=False)
        if label.stdout.strip() != SCRATCH_LABEL:
            raise AgentError(f"instance-store disks {busy} are in use by {device}, not ours")
        log(f"scratch: mounting the array assembled again at boot ({device})")
    elif len(disks) == 1:
        device = f"/dev/{disks[0]}"
    else:
        device = SCRATCH_MD
        if not ctx.path(SCRATCH_MD).exists():
            devices = [f"/dev/{d}" for d in disks]
            ctx.sh(
                "mdadm",
                "--create",
                SCRATCH_MD,
                "--run",
                "--level=0",
                "--chunk=256",
                f"--raid-devices={len(devices)}",
                *devices,
            )
    if ctx.sh("blkid", device, check=False).returncode != 0:
        ctx.sh("mkfs.ext4", "-F", "-q", "-L", SCRATCH_LABEL, "-E", "nodiscard", device)
    system.mkdir(ctx, mount)
    ctx.sh("mount", "-o", "noatime", device, mount)
    ctx.sh("chmod", "1777", mount)
    uuid = ctx.sh("blkid", "-s", "UUID", "-o", "value", device).stdout.strip()
    system.fstab(ctx, f"UUID={uuid}", mount, "ext4", FSTAB_OPTIONS)
    return mount
