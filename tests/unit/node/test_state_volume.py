"""state-volume: the head node's Slurm state EBS volume, found, formatted once, mounted."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack.contract import DeployParameter
from slurmstack.node.boot import config_sync, state_volume
from slurmstack.node.context import AgentError
from support.node import PLAN, Runner, fake_disks, make_node, publish_config


def test_state_volume_found_by_volume_id(aws, tmp_path: Path) -> None:
    publish_config(aws, "head")
    aws.client("ssm").put_parameter(
        Name=PLAN.parameter(DeployParameter.STATE_VOLUME_ID), Value="vol-0abc", Type="String"
    )
    run = Runner(fail={"blkid"})

    class Blkid(Runner):
        def __call__(self, cmd, check=True):
            if cmd[:2] == ["blkid", "-s"]:
                self.calls.append(cmd)
                import subprocess

                return subprocess.CompletedProcess(cmd, 0, "uuid-1\n", "")
            return run(cmd, check) if cmd[0] != "blkid" else Runner(fail={"blkid"})(cmd, check)

    node = make_node(tmp_path, aws, "head", run=Blkid())
    config_sync.sync_config(node, poll=0)
    fake_disks(tmp_path, [state_volume.EBS_MODEL, state_volume.EBS_MODEL])
    (tmp_path / "sys/block/nvme0n1/device/serial").write_text("vol0root\n")
    (tmp_path / "sys/block/nvme1n1/device/serial").write_text("vol0abc\n")
    assert state_volume.state_volume(node, timeout=0) == "/dev/nvme1n1"
    assert ["mkfs.ext4", "-q", "-L", "slurm-state", "/dev/nvme1n1"] in run.calls
    assert "UUID=uuid-1 /var/spool/slurmctld ext4" in (tmp_path / "etc/fstab").read_text()
    assert (tmp_path / "var/spool/slurmctld/state").is_dir()


def test_state_volume_waits_then_gives_up(aws, tmp_path: Path) -> None:
    publish_config(aws, "head")
    node = make_node(tmp_path, aws, "head")
    config_sync.sync_config(node, poll=0)
    with pytest.raises(AgentError, match="not attached"):
        state_volume.state_volume(node, timeout=10, poll=5)
