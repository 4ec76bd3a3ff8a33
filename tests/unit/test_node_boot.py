"""A node's boot and every later slurmd start: the bootstrap runner (a failed step is named,
recorded and, on a worker, ends in an Unhealthy instance; the image contract is checked and
nothing installed), the head's
address read again before each slurmd start, and /scratch across reboots. Against moto's
in-process AWS, on fake device trees under tmp_path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from test_node_agent import (
    PLAN,
    REGION,
    Runner,
    Unformatted,
    asg_with_instance,
    fake_disks,
    make_node,
    scratch_node,
)

from helpers_examples import example_plan
from slurmstack.node import base, bootstrap, cli, scratch, state_volume
from slurmstack.plan import DeployParameter
from slurmstack.render import SLURMD_UNIT_PATH, mount_unit_name, pool_files


@pytest.fixture
def aws():
    with mock_aws():
        yield boto3.session.Session(region_name=REGION)


STORE = scratch.INSTANCE_STORE_MODEL

# --- the bootstrap runner ---------------------------------------------------------------


def boot_root(tmp_path: Path, role: str, instance: str = "i-0123456789abcdef0") -> Path:
    """What cloud-init leaves before runcmd: bootstrap.env and the instance id."""
    make_node(tmp_path, None, role)
    instance_file = tmp_path / bootstrap.INSTANCE_ID_FILE.lstrip("/")
    instance_file.parent.mkdir(parents=True)
    instance_file.write_text(instance + "\n")
    return tmp_path


def failed_marker(root: Path) -> str:
    return (root / bootstrap.FAILED_MARKER.lstrip("/")).read_text()


def health(session, instance: str) -> str:
    status = session.client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance])
    return str(status["AutoScalingInstances"][0]["HealthStatus"]).upper()


def test_a_failed_worker_step_is_named_and_the_instance_replaced(aws, tmp_path, capsys) -> None:
    instance = asg_with_instance(aws)
    root = boot_root(tmp_path, "train", instance)
    argv = ["run", sys.executable, "-c", "import sys; sys.exit(3)"]
    code = bootstrap.main(argv, session=aws, root=str(root))
    assert code == 1
    step = " ".join(argv[1:])
    assert f"FAILED step `{step}`: exit status 3" in capsys.readouterr().err
    assert f"step `{step}`: exit status 3" in failed_marker(root)
    assert health(aws, instance) == "UNHEALTHY"
    assert not (root / bootstrap.DONE_MARKER.lstrip("/")).exists()


def test_a_step_that_passes_leaves_no_mark(aws, tmp_path) -> None:
    instance = asg_with_instance(aws)
    root = boot_root(tmp_path, "train", instance)
    assert bootstrap.main(["run", sys.executable, "-c", "pass"], session=aws, root=str(root)) == 0
    assert not (root / bootstrap.FAILED_MARKER.lstrip("/")).exists()
    assert health(aws, instance) == "HEALTHY"
    assert bootstrap.main(["done"], session=aws, root=str(root)) == 0
    assert (root / bootstrap.DONE_MARKER.lstrip("/")).read_text().strip().endswith("done")


class NoAws:
    """A session whose every client fails, as on a node without credentials or network."""

    def client(self, *_args, **_kwargs):
        raise RuntimeError("Unable to locate credentials")


def test_a_failed_install_is_reported_too(tmp_path, capsys) -> None:
    root = boot_root(tmp_path, "train")
    run = Runner()
    assert bootstrap.main(["install"], session=NoAws(), root=str(root), run=run) == 1
    assert "step `install`: Unable to locate credentials" in failed_marker(root)
    # It cannot mark itself Unhealthy either: it powers off, which the group's EC2 health
    # check sees as unhealthy.
    assert run.calls == [["systemctl", "poweroff"]]
    assert "powering off" in capsys.readouterr().err


def test_the_head_records_its_failure_and_stays_up(tmp_path) -> None:
    root = boot_root(tmp_path, "head")
    run = Runner(fail={"systemctl"})
    assert (
        bootstrap.main(["run", "systemctl", "start", "x"], session=NoAws(), root=str(root), run=run)
        == 1
    )
    assert "step `systemctl start x`: exit status 1" in failed_marker(root)
    assert run.calls == [["systemctl", "start", "x"]]  # no poweroff, no AWS call


def image_tree(root: Path, commands: list[str], files: tuple[str, ...] = ()) -> None:
    for name in commands:
        path = root / "usr/bin" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    for name in files:
        path = root / name.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()


def test_check_passes_an_image_that_holds_the_contract(tmp_path: Path) -> None:
    items = ["cmd:slurmd", "cmd:munged", "file:/usr/local/lib/slurm/spank_pyxis.so", "py:json"]
    image_tree(tmp_path, ["slurmd", "munged"], ("/usr/local/lib/slurm/spank_pyxis.so",))
    assert bootstrap.missing_from_image(items, root=str(tmp_path)) == []
    run = Runner()
    assert bootstrap.main(["check", *items], root=str(tmp_path), run=run) == 0
    assert run.calls == []  # nothing run, nothing installed
    assert not (tmp_path / bootstrap.FAILED_MARKER.lstrip("/")).exists()


def test_check_names_what_the_image_lacks_and_marks_a_worker_unhealthy(aws, tmp_path: Path) -> None:
    """An image of one's own without enroot or boto3: the boot stops at the check, says what is
    missing and where the contract is written, and the worker is replaced."""
    instance = asg_with_instance(aws)
    (tmp_path / "var/lib/cloud/data").mkdir(parents=True)
    (tmp_path / "var/lib/cloud/data/instance-id").write_text(instance)
    env = tmp_path / bootstrap.BOOTSTRAP_ENV.lstrip("/")
    env.parent.mkdir(parents=True)
    env.write_text(f"SLURMSTACK_ROLE=train\nSLURMSTACK_REGION={REGION}\n")
    image_tree(tmp_path, ["slurmd"])
    items = ["cmd:slurmd", "cmd:enroot", "py:no_such_module_here"]
    run = Runner()
    assert bootstrap.main(["check", *items], session=aws, root=str(tmp_path), run=run) == 1
    failed = (tmp_path / bootstrap.FAILED_MARKER.lstrip("/")).read_text()
    assert "step `check`: the image lacks cmd:enroot, py:no_such_module_here" in failed
    assert "image contract" in failed
    health = aws.client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance])
    assert health["AutoScalingInstances"][0]["HealthStatus"].upper() == "UNHEALTHY"
    assert not any(c and c[0] in ("apt-get", "apt", "dpkg") for c in run.calls)


def test_the_bootstrap_has_no_package_step_left() -> None:
    source = Path(bootstrap.__file__).read_text()
    assert "apt-get" not in source and "def packages" not in source
    assert bootstrap.main(["packages", "munge"], root="/nonexistent") == 1


# --- the head's address before every slurmd start ---------------------------------------


def worker_with_env(tmp_path: Path, session, head: str | None = "10.42.0.10") -> object:
    node = scratch_node(tmp_path, session, Runner())
    env = tmp_path / "etc/slurmstack/node.env"
    lines = ["SLURMSTACK_ADDRESS=10.42.7.19", "SLURMSTACK_NODE_NAME=train-1811"]
    if head:
        lines.append(f"SLURMSTACK_HEAD_ADDRESS={head}")
    env.write_text("\n".join(lines) + "\n")
    return node


def test_head_address_follows_the_parameter(aws, tmp_path: Path) -> None:
    node = worker_with_env(tmp_path, aws)
    ssm = aws.client("ssm")
    name = PLAN.parameter(DeployParameter.HEAD_ADDRESS)
    ssm.put_parameter(Name=name, Value="10.42.0.10", Type="String")
    assert node.head_address() == "10.42.0.10"  # type: ignore[attr-defined]
    assert not (tmp_path / "etc/hosts").exists()  # unchanged: nothing rewritten
    ssm.put_parameter(Name=name, Value="10.42.3.3", Type="String", Overwrite=True)
    assert cli.main(["head-address"], node=node) == 0  # type: ignore[arg-type]
    env = base.read_env_file(tmp_path / "etc/slurmstack/node.env")
    assert env["SLURMSTACK_HEAD_ADDRESS"] == "10.42.3.3"
    assert env["SLURMSTACK_NODE_NAME"] == "train-1811"
    hosts = (tmp_path / "etc/hosts").read_text()
    assert "10.42.3.3 llm-train-head" in hosts and "10.42.7.19 train-1811" in hosts
    assert "10.42.0.10" not in hosts


def test_head_address_keeps_the_known_one_when_ssm_cannot_answer(aws, tmp_path: Path) -> None:
    node = worker_with_env(tmp_path, aws)
    node._session = NoAws()  # type: ignore[attr-defined]
    assert node.head_address() == "10.42.0.10"  # type: ignore[attr-defined]
    assert not (tmp_path / "etc/hosts").exists()
    # A node that never knew the address cannot start slurmd without it.
    (tmp_path / "etc/slurmstack/node.env").write_text("SLURMSTACK_NODE_NAME=train-1811\n")
    assert cli.main(["head-address"], node=node) == 1  # type: ignore[arg-type]


def test_slurmd_reads_the_head_address_again_before_every_start() -> None:
    plan = example_plan("p5-training")
    unit = pool_files(plan, plan.pool("train"))[SLURMD_UNIT_PATH].splitlines()
    pre = [line for line in unit if line.startswith("ExecStartPre=")]
    assert pre[0] == "ExecStartPre=/usr/local/bin/slurmstack-node head-address"
    start = next(line for line in unit if line.startswith("ExecStart="))
    assert "--conf-server ${SLURMSTACK_HEAD_ADDRESS}:" in start
    # systemd reads EnvironmentFile= anew for ExecStart, after the ExecStartPre steps.
    assert "EnvironmentFile=/etc/slurmstack/node.env" in unit


# --- /scratch across reboots -------------------------------------------------------------


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
    assert node.scratch() == "/scratch"
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
    assert node.scratch() == "/scratch"
    assert ["mount", "-o", "noatime", "/dev/md127", "/scratch"] in run.calls
    assert not any(c[0] in ("mdadm", "mkfs.ext4") for c in run.calls)
    assert len(fstab_lines(tmp_path)) == 1


def test_disks_held_by_something_else_are_not_taken(aws, tmp_path) -> None:
    node = scratch_node(tmp_path, aws, Labelled("cloudimg"))
    fake_disks(tmp_path, [STORE, STORE], holders={"nvme0n1": "md0"})
    with pytest.raises(base.AgentError, match="in use by /dev/md0"):
        node.scratch()


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
    assert node.scratch() == "/scratch"
    assert any(c[:2] == ["mdadm", "--create"] for c in run.calls)
    assert fstab_lines(tmp_path) == [f"UUID=uuid-1234 /scratch ext4 {scratch.FSTAB_OPTIONS} 0 0"]
    assert fstab_lines(tmp_path, "/") == ["LABEL=cloudimg-rootfs / ext4 defaults 0 1"]


def test_no_scratch_no_slurmd(aws, tmp_path) -> None:
    """Without its disks the step fails, so slurmd (whose ExecStartPre it is) does not start
    and no job writes the node's scratch onto the root volume."""
    node = scratch_node(tmp_path, aws, Runner())
    fake_disks(tmp_path, [state_volume.EBS_MODEL])
    with pytest.raises(base.AgentError, match="slurmd stays off"):
        node.scratch()
    assert cli.main(["scratch"], node=node) == 1


def test_the_image_s_own_scratch_is_bound_in_fstab_too(aws, tmp_path) -> None:
    run = Runner()
    node = scratch_node(tmp_path, aws, run)
    fake_disks(tmp_path, [state_volume.EBS_MODEL, STORE], holders={"nvme1n1": "md127"})
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/mounts").write_text("/dev/md127 /opt/dlami/nvme ext4 rw 0 0\n")
    node.scratch()
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
            "/usr/local/bin/slurmstack-node health",
        ]
        assert not [unit for unit in after if unit.endswith(".mount")]
    else:
        assert pre.index("/usr/local/bin/slurmstack-node scratch") < pre.index(
            "/usr/local/bin/slurmstack-node health"
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
