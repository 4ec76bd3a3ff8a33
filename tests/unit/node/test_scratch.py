"""scratch: RAID0 over the instance-store NVMe disks, across reboots and stop/start."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from slurmstack.node import cli
from slurmstack.node.boot import scratch, state_volume
from slurmstack.node.context import AgentError
from slurmstack.render import SLURMD_UNIT_PATH, mount_unit_name, pool_files
from support.examples import example_plan
from support.node import STORE, Runner, Unformatted, fake_disks, scratch_node


def test_scratch_raid0_over_instance_store_disks_only(aws, tmp_path: Path) -> None:
    run = Unformatted()
    node = scratch_node(tmp_path, aws, run)
    store = scratch.INSTANCE_STORE_MODEL
    fake_disks(tmp_path, [state_volume.EBS_MODEL] + [store] * 8)
    assert scratch.scratch(node) == "/scratch"
    create = next(c for c in run.calls if c[0] == "mdadm")
    assert "--level=0" in create and "--raid-devices=8" in create
    assert "/dev/nvme0n1" not in create  # the root EBS volume
    assert ["mount", "-o", "noatime", scratch.SCRATCH_MD, "/scratch"] in run.calls
    assert any(c[0] == "mkfs.ext4" for c in run.calls)


def test_scratch_single_disk_needs_no_raid(aws, tmp_path: Path) -> None:
    run = Unformatted()
    node = scratch_node(tmp_path, aws, run)
    fake_disks(tmp_path, [state_volume.EBS_MODEL, scratch.INSTANCE_STORE_MODEL])
    scratch.scratch(node)
    assert not any(c[0] == "mdadm" for c in run.calls)
    assert ["mount", "-o", "noatime", "/dev/nvme1n1", "/scratch"] in run.calls


def test_scratch_reuses_disks_the_image_already_assembled(aws, tmp_path: Path) -> None:
    run = Runner()
    node = scratch_node(tmp_path, aws, run)
    store = scratch.INSTANCE_STORE_MODEL
    fake_disks(tmp_path, [state_volume.EBS_MODEL, store, store], holders={"nvme1n1": "md127"})
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/mounts").write_text("/dev/md127 /opt/dlami/nvme ext4 rw 0 0\n")
    scratch.scratch(node)
    assert ["mount", "--bind", "/opt/dlami/nvme", "/scratch"] in run.calls
    assert not any(c[0] in ("mdadm", "mkfs.ext4") for c in run.calls)


class Labelled(Runner):
    """blkid as on a disk whose file system is labelled ``label``."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    def __call__(self, cmd: list[str], check: bool = True):
        if cmd[:3] == ["blkid", "-s", "LABEL"]:
            self.calls.append(cmd)
            return subprocess.CompletedProcess(cmd, 0, self.label + "\n", "")
        return super().__call__(cmd, check)


def fstab_lines(root: Path, mount: str = "/scratch") -> list[str]:
    lines = (root / "etc/fstab").read_text().splitlines()
    return [line for line in lines if line.split()[1:2] == [mount]]


def test_first_boot_puts_scratch_in_fstab_without_blocking_the_boot(aws, tmp_path) -> None:
    node = scratch_node(tmp_path, aws, Unformatted())
    fake_disks(tmp_path, [state_volume.EBS_MODEL] + [STORE] * 4)
    assert scratch.scratch(node) == "/scratch"
    (line,) = fstab_lines(tmp_path)
    assert line == f"UUID=uuid-1234 /scratch ext4 {scratch.FSTAB_OPTIONS} 0 0"
    assert "nofail" in line.split()[3].split(",")


def test_after_a_reboot_the_reassembled_array_is_mounted_not_remade(aws, tmp_path) -> None:
    """mdadm assembled the array again at boot under another name; its data is kept."""
    run = Labelled("scratch")
    node = scratch_node(tmp_path, aws, run)
    fake_disks(
        tmp_path,
        [state_volume.EBS_MODEL, STORE, STORE],
        holders={"nvme1n1": "md127", "nvme2n1": "md127"},
    )
    assert scratch.scratch(node) == "/scratch"
    assert ["mount", "-o", "noatime", "/dev/md127", "/scratch"] in run.calls
    assert not any(c[0] in ("mdadm", "mkfs.ext4") for c in run.calls)
    assert len(fstab_lines(tmp_path)) == 1


def test_disks_held_by_something_else_are_not_taken(aws, tmp_path) -> None:
    node = scratch_node(tmp_path, aws, Labelled("cloudimg"))
    fake_disks(tmp_path, [STORE, STORE], holders={"nvme0n1": "md0"})
    with pytest.raises(AgentError, match="in use by /dev/md0"):
        scratch.scratch(node)


def test_after_a_stop_and_start_the_blank_disks_get_a_new_array(aws, tmp_path) -> None:
    """The old fstab entry names a file system that is gone; the step makes a new one and the
    entry follows it."""
    run = Unformatted()
    node = scratch_node(tmp_path, aws, run)
    (tmp_path / "etc/fstab").write_text(
        "LABEL=cloudimg-rootfs / ext4 defaults 0 1\n"
        f"UUID=old-uuid /scratch ext4 {scratch.FSTAB_OPTIONS} 0 0\n"
    )
    fake_disks(tmp_path, [STORE, STORE])
    assert scratch.scratch(node) == "/scratch"
    assert any(c[:2] == ["mdadm", "--create"] for c in run.calls)
    assert fstab_lines(tmp_path) == [f"UUID=uuid-1234 /scratch ext4 {scratch.FSTAB_OPTIONS} 0 0"]
    assert fstab_lines(tmp_path, "/") == ["LABEL=cloudimg-rootfs / ext4 defaults 0 1"]


def test_no_scratch_no_slurmd(aws, tmp_path) -> None:
    """Without its disks the step fails, so slurmd (whose ExecStartPre it is) does not start
    and no job writes the node's scratch onto the root volume."""
    node = scratch_node(tmp_path, aws, Runner())
    fake_disks(tmp_path, [state_volume.EBS_MODEL])
    with pytest.raises(AgentError, match="slurmd stays off"):
        scratch.scratch(node)
    assert cli.main(["scratch"], ctx=node) == 1


def test_the_image_s_own_scratch_is_bound_in_fstab_too(aws, tmp_path) -> None:
    run = Runner()
    node = scratch_node(tmp_path, aws, run)
    fake_disks(tmp_path, [state_volume.EBS_MODEL, STORE], holders={"nvme1n1": "md127"})
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/mounts").write_text("/dev/md127 /opt/dlami/nvme ext4 rw 0 0\n")
    scratch.scratch(node)
    (line,) = fstab_lines(tmp_path)
    assert line.split()[:3] == ["/opt/dlami/nvme", "/scratch", "none"]
    assert "nofail" in line and "x-systemd.requires-mounts-for=/opt/dlami/nvme" in line


@pytest.mark.parametrize(("example", "pool"), [("p5-training", "train"), ("cpu-hpc", "batch")])
def test_slurmd_starts_only_with_its_scratch_mounted(example: str, pool: str) -> None:
    plan = example_plan(example)
    planned = plan.pool(pool)
    unit = pool_files(plan, planned)[SLURMD_UNIT_PATH].splitlines()
    pre = [line.removeprefix("ExecStartPre=") for line in unit if line.startswith("ExecStartPre=")]
    after = next(line for line in unit if line.startswith("After=")).split("=", 1)[1].split()
    scratch_mount = planned.local_scratch_mount
    if scratch_mount is None:
        assert pre == [
            "/usr/local/bin/slurmstack-node head-address",
            "/usr/local/bin/slurmstack-node job-dirs",
            "/usr/local/bin/slurmstack-node health",
        ]
        assert not [unit for unit in after if unit.endswith(".mount")]
    else:
        assert pre.index("/usr/local/bin/slurmstack-node scratch") < pre.index(
            "/usr/local/bin/slurmstack-node health"
        )
        # enroot's directories on the scratch, once it is mounted.
        assert pre.index("/usr/local/bin/slurmstack-node scratch") < pre.index(
            "/usr/local/bin/slurmstack-node job-dirs"
        )
        # After systemd's own attempt at the fstab entry, so the two never race.
        assert mount_unit_name(scratch_mount.path) in after


@pytest.mark.parametrize("path", ["/scratch", "/local/nvme-scratch", "/data/.cache", "/a_b:c"])
def test_mount_unit_names_are_systemds(path: str) -> None:
    escape = shutil.which("systemd-escape")
    if escape is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but systemd-escape is missing (apt: systemd)")
        pytest.skip("systemd-escape is not installed")
    expected = subprocess.run(
        [escape, "--path", "--suffix=mount", path], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert mount_unit_name(path) == expected
