"""mounts: EFS and FSx for Lustre, retried until they answer (Lustre over EFA: LNet first)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack.node.boot import lnet, mounts
from slurmstack.node.context import AgentError
from slurmstack.render import role_files
from support.examples import example_plan
from support.node import (
    NODE_ADDRESS,
    P5_EFA_DEVICES,
    LnetRunner,
    Runner,
    fake_efa_devices,
    lnet_node,
    make_node,
    scratch_node,
)


def test_mounts_over_efa_configure_lnet_before_the_lustre_mount(aws, tmp_path: Path) -> None:
    run = LnetRunner()
    node = lnet_node(tmp_path, aws, run)
    fake_efa_devices(tmp_path, P5_EFA_DEVICES)
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin/mount.lustre").touch()
    (tmp_path / "sbin/mount.efs").touch()
    (tmp_path / "etc/slurmstack/node.env").write_text(
        "SLURMSTACK_EFS_ID=fs-0123\nSLURMSTACK_LUSTRE_DNS=fs-1.fsx.us-east-1.amazonaws.com\n"
        f"SLURMSTACK_LUSTRE_MOUNT_NAME=abcd\nSLURMSTACK_ADDRESS={NODE_ADDRESS}\n"
    )
    mounts.mounts(node, delay=0)
    udsp = run.calls.index(["lnetctl", "udsp", "add", "--src", "efa", "--priority", "0"])
    assert udsp < run.calls.index(["mount", "/fsx"])
    fstab = (tmp_path / "etc/fstab").read_text()
    assert (
        "fs-1.fsx.us-east-1.amazonaws.com@tcp:/abcd /fsx lustre noatime,flock,"
        "x-systemd.requires=slurmstack-lustre-efa.service,_netdev,nofail 0 0" in fstab
    )
    unit = (tmp_path / "etc/systemd/system/slurmstack-lustre-efa.service").read_text()
    assert "ExecStart=/usr/local/bin/slurmstack-node lnet-efa" in unit


def test_a_tcp_only_node_runs_no_lnet_commands(aws, tmp_path: Path) -> None:
    """p4d (Nitro v3) mounts Lustre over TCP: mount.lustre brings LNet up on its own."""
    plan = example_plan("p4d-odcr")
    run = LnetRunner()
    node = make_node(tmp_path, aws, "a100", run=run)
    files = role_files(plan, "a100")
    assert "/etc/systemd/system/slurmstack-lustre-efa.service" not in files
    config = tmp_path / "etc/slurmstack/node.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(files["/etc/slurmstack/node.json"])
    assert node.config().lustre_efa_interfaces == 0
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin/mount.lustre").touch()
    (tmp_path / "sbin/mount.efs").touch()
    fake_efa_devices(tmp_path, [f"rdmap{n}s0" for n in range(4)])
    (tmp_path / "etc/slurmstack/node.env").write_text(
        "SLURMSTACK_EFS_ID=fs-0123\nSLURMSTACK_LUSTRE_DNS=fs-2.fsx.us-west-2.amazonaws.com\n"
        f"SLURMSTACK_LUSTRE_MOUNT_NAME=wxyz\nSLURMSTACK_ADDRESS={NODE_ADDRESS}\n"
    )
    assert lnet.lnet_efa(node, delay=0) == []
    assert mounts.mounts(node, delay=0) == ["/home", "/fsx"]
    assert run.calls == [["mount", "/home"], ["mount", "/fsx"]]
    fstab = (tmp_path / "etc/fstab").read_text()
    assert (
        "fs-2.fsx.us-west-2.amazonaws.com@tcp:/wxyz /fsx lustre noatime,flock,_netdev,nofail"
        in fstab
    )
    assert "x-systemd" not in fstab


def test_mounts_retry_until_the_file_system_answers(aws, tmp_path: Path) -> None:
    class Flaky(LnetRunner):
        def __call__(self, cmd, check=True):
            if cmd == ["mount", "/home"] and sum(c == cmd for c in self.calls) < 2:
                self.calls.append(cmd)
                import subprocess

                return subprocess.CompletedProcess(cmd, 32, "", "no such host")
            return super().__call__(cmd, check)

    run = Flaky()
    node = scratch_node(tmp_path, aws, run)
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin/mount.lustre").touch()
    (tmp_path / "sbin/mount.efs").touch()
    fake_efa_devices(tmp_path, P5_EFA_DEVICES)
    (tmp_path / "etc/slurmstack/node.env").write_text(
        "SLURMSTACK_EFS_ID=fs-0123\nSLURMSTACK_LUSTRE_DNS=fs-1.fsx.us-east-1.amazonaws.com\n"
        f"SLURMSTACK_LUSTRE_MOUNT_NAME=abcd\nSLURMSTACK_ADDRESS={NODE_ADDRESS}\n"
    )
    assert mounts.mounts(node, delay=0) == ["/home", "/fsx"]
    assert run.calls.count(["mount", "/home"]) == 3
    fstab = (tmp_path / "etc/fstab").read_text()
    # amazon-efs-utils' helper, with TLS in transit.
    assert "fs-0123:/ /home efs tls,_netdev,nofail 0 0" in fstab
    assert "fs-1.fsx.us-east-1.amazonaws.com@tcp:/abcd /fsx lustre noatime,flock" in fstab


def test_mounts_refuse_an_image_without_the_client(aws, tmp_path: Path) -> None:
    """Nothing is installed at boot: a node whose image lacks a mount helper fails the step,
    naming what is missing, and runs no mount of it (and no apt)."""
    run = Runner()
    node = scratch_node(tmp_path, aws, run)
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin/mount.efs").touch()
    (tmp_path / "etc/slurmstack/node.env").write_text(
        "SLURMSTACK_EFS_ID=fs-1\nSLURMSTACK_LUSTRE_DNS=x\nSLURMSTACK_LUSTRE_MOUNT_NAME=y\n"
    )
    with pytest.raises(AgentError, match=r"mount\.lustre is missing: the image lacks"):
        mounts.mounts(node, attempts=1, delay=0)
    assert ["mount", "/fsx"] not in run.calls
    assert not any(c[0] == "apt-get" for c in run.calls)


def test_mounts_give_up_after_the_last_attempt(aws, tmp_path: Path) -> None:
    run = Runner(fail={"mount"})
    node = scratch_node(tmp_path, aws, run)
    (tmp_path / "etc/slurmstack/node.env").write_text("SLURMSTACK_EFS_ID=fs-1\n")
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin/mount.lustre").touch()
    (tmp_path / "sbin/mount.efs").touch()
    (tmp_path / "etc/slurmstack/node.env").write_text(
        "SLURMSTACK_EFS_ID=fs-1\nSLURMSTACK_LUSTRE_DNS=x\nSLURMSTACK_LUSTRE_MOUNT_NAME=y\n"
    )
    with pytest.raises(AgentError, match="failed 3 times"):
        mounts.mounts(node, attempts=3, delay=0)
