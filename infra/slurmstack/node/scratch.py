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

from .base import AgentError, NodeBase, log

INSTANCE_STORE_MODEL = "Amazon EC2 NVMe Instance Storage"
SCRATCH_MD = "/dev/md/slurmstack-scratch"
SCRATCH_LABEL = "scratch"
# A boot whose array is gone (stop and start) gives up on the fstab entry after this long.
FSTAB_OPTIONS = "noatime,nofail,x-systemd.device-timeout=10s"


class Scratch(NodeBase):
    def instance_store_disks(self) -> list[str]:
        block = self.path("/sys/block")
        disks = []
        for entry in sorted(block.iterdir()) if block.is_dir() else []:
            model = entry / "device" / "model"
            if model.exists() and model.read_text().strip() == INSTANCE_STORE_MODEL:
                disks.append(entry.name)
        return disks

    def scratch(self) -> str | None:
        config = self.config()
        scratch = config.get("scratch")
        if not scratch:
            return None
        mount = str(scratch["mount"])
        if self._mounted(mount):
            return mount
        disks = self.instance_store_disks()
        if not disks:
            raise AgentError(
                f"no instance-store NVMe disks for {mount}: not mounted, so slurmd stays off "
                "rather than let jobs fill the root volume"
            )
        busy = [d for d in disks if any((self.path("/sys/block") / d / "holders").glob("*"))]
        if busy:
            holder = next((self.path("/sys/block") / busy[0] / "holders").iterdir()).name
            source = self._mount_point_of(f"/dev/{holder}")
            if source is not None:
                # The image already assembled and mounted the disks (the Deep Learning AMI at
                # /opt/dlami/nvme): reuse that file system rather than destroy it.
                self._mkdir(mount)
                self.sh("mount", "--bind", source, mount)
                self._fstab(
                    source, mount, "none", f"bind,nofail,x-systemd.requires-mounts-for={source}"
                )
                return mount
            device = f"/dev/{holder}"
            label = self.sh("blkid", "-s", "LABEL", "-o", "value", device, check=False)
            if label.stdout.strip() != SCRATCH_LABEL:
                raise AgentError(f"instance-store disks {busy} are in use by {device}, not ours")
            log(f"scratch: mounting the array assembled again at boot ({device})")
        elif len(disks) == 1:
            device = f"/dev/{disks[0]}"
        else:
            device = SCRATCH_MD
            if not self.path(SCRATCH_MD).exists():
                devices = [f"/dev/{d}" for d in disks]
                self.sh(
                    "mdadm",
                    "--create",
                    SCRATCH_MD,
                    "--run",
                    "--level=0",
                    "--chunk=256",
                    f"--raid-devices={len(devices)}",
                    *devices,
                )
        if self.sh("blkid", device, check=False).returncode != 0:
            self.sh("mkfs.ext4", "-F", "-q", "-L", SCRATCH_LABEL, "-E", "nodiscard", device)
        self._mkdir(mount)
        self.sh("mount", "-o", "noatime", device, mount)
        self.sh("chmod", "1777", mount)
        uuid = self.sh("blkid", "-s", "UUID", "-o", "value", device).stdout.strip()
        self._fstab(f"UUID={uuid}", mount, "ext4", FSTAB_OPTIONS)
        return mount
