"""state-volume (head): the Slurm state EBS volume: found, formatted once, mounted."""

from __future__ import annotations

import os
from pathlib import Path

from .base import PARAM_STATE_VOLUME_ID, AgentError, NodeBase

EBS_MODEL = "Amazon Elastic Block Store"


def _read_strip(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


class StateVolume(NodeBase):
    def state_volume_device(self) -> str | None:
        """The state volume's NVMe disk: the EBS disk whose serial is the volume id without
        its dash (the stack publishes the id); without the id, the one EBS disk that is
        neither the root disk nor in use."""
        volume = self.get_parameter(PARAM_STATE_VOLUME_ID)
        block = self.path("/sys/block")
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
            if not in_use and self._mount_point_of(f"/dev/{entry.name}") is None:
                candidates.append(f"/dev/{entry.name}")
        return candidates[0] if len(candidates) == 1 else None

    def state_volume(self, timeout: float = 900.0, poll: float = 5.0) -> str:
        """The stack attaches the volume after the instance exists: wait for it."""
        spec = self.config()["state_volume"]
        mount, state_dir = str(spec["mount"]), str(spec["state_dir"])
        waited = 0.0
        device = self.state_volume_device()
        while device is None:
            if waited >= timeout:
                raise AgentError("the Slurm state volume was not attached in time")
            self.sleep(poll)  # type: ignore[operator]
            waited += poll
            device = self.state_volume_device()
        if self.sh("blkid", device, check=False).returncode != 0:
            self.sh("mkfs.ext4", "-q", "-L", "slurm-state", device)
        uuid = self.sh("blkid", "-s", "UUID", "-o", "value", device).stdout.strip()
        self._fstab(f"UUID={uuid}", mount, "ext4", "defaults,noatime,nofail")
        if not self._mounted(mount):
            self._mkdir(mount)
            self.sh("mount", mount)
        self._mkdir(state_dir)
        uid, gid = self.owner("slurm")  # type: ignore[operator]
        os.chown(self.path(state_dir), uid, gid)
        os.chmod(self.path(state_dir), 0o700)
        return device
