"""scratch: RAID0 over the instance-store NVMe disks, mounted at the pool's scratch path."""

from __future__ import annotations

from .base import AgentError, NodeBase, log

INSTANCE_STORE_MODEL = "Amazon EC2 NVMe Instance Storage"
SCRATCH_MD = "/dev/md/slurmstack-scratch"


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
            log("no instance-store NVMe disks: no scratch array")
            return None
        busy = [d for d in disks if any((self.path("/sys/block") / d / "holders").glob("*"))]
        if busy:
            # The image already assembled the disks (the Deep Learning AMI mounts them at
            # /opt/dlami/nvme): reuse that file system rather than destroy it.
            holder = next((self.path("/sys/block") / busy[0] / "holders").iterdir()).name
            source = self._mount_point_of(f"/dev/{holder}")
            if source is None:
                raise AgentError(f"instance-store disks {busy} are in use but not mounted")
            self._mkdir(mount)
            self.sh("mount", "--bind", source, mount)
            return mount
        devices = [f"/dev/{d}" for d in disks]
        if len(devices) == 1:
            device = devices[0]
        else:
            device = SCRATCH_MD
            if not self.path(SCRATCH_MD).exists():
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
            self.sh("mkfs.ext4", "-F", "-q", "-L", "scratch", "-E", "nodiscard", device)
        self._mkdir(mount)
        self.sh("mount", "-o", "noatime", device, mount)
        self.sh("chmod", "1777", mount)
        return mount
