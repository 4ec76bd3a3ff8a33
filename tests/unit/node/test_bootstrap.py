"""The first-boot runner (slurmstack/node/bootstrap.py): the agent installed from the config store
and checked, a failed step named, recorded and, on a worker, an Unhealthy instance; apt waits
for its lock."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from node.support import BUCKET, PLAN, NoAws, Runner, asg_with_instance, make_node, publish_config
from slurmstack.node import bootstrap
from slurmstack.render import (
    AGENT_DIR,
    AGENT_LIB_DIR,
    AGENT_PATH,
    PACKAGE_DIR,
    agent_modules,
    config_store,
    role_files,
)


def health_status(session, instance: str) -> str:
    status = session.client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance])
    return str(status["AutoScalingInstances"][0]["HealthStatus"]).upper()


def test_bootstrap_installs_the_agent_from_the_store(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    node = make_node(tmp_path, aws, "train")
    target = bootstrap.install(node.bootstrap_env(), aws, root=str(tmp_path), poll=0)
    assert target == str(tmp_path / AGENT_PATH.lstrip("/"))
    agent = {p: t for p, t in role_files(PLAN, "train").items() if p.startswith("/usr/local/")}
    modules = {f"{AGENT_DIR}/{m.relative_to(PACKAGE_DIR).as_posix()}": m for m in agent_modules()}
    assert sorted(agent) == sorted([AGENT_PATH, *modules])
    for path, text in agent.items():
        installed = tmp_path / path.lstrip("/")
        assert installed.read_text() == text
        assert os.stat(installed).st_mode & 0o777 == (0o755 if path == AGENT_PATH else 0o644)
    for path, module in modules.items():
        assert agent[path] == module.read_text()
    # The launcher runs the installed package (pointed at tmp_path's copy of the library).
    launcher = Path(target).read_text().replace(AGENT_LIB_DIR, str(tmp_path / AGENT_LIB_DIR[1:]))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-I", "-c", launcher, "--help"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "slurmstack-node" in done.stdout and "state-volume" in done.stdout


@pytest.mark.parametrize(
    "path", [AGENT_PATH, f"{AGENT_DIR}/node/context.py", f"{AGENT_DIR}/contract.py"]
)
def test_bootstrap_refuses_a_tampered_agent(aws, tmp_path: Path, path: str) -> None:
    publish_config(aws, "train")
    key = config_store(PLAN).manifest["train"][path]
    aws.client("s3").put_object(Bucket=BUCKET, Key=key, Body=b"evil")
    node = make_node(tmp_path, aws, "train")
    with pytest.raises(SystemExit, match="does not match"):
        bootstrap.install(node.bootstrap_env(), aws, root=str(tmp_path), poll=0)
    assert not (tmp_path / "usr/local").exists()


def boot_root(tmp_path: Path, role: str, instance: str = "i-0123456789abcdef0") -> Path:
    """What cloud-init leaves before runcmd: bootstrap.env and the instance id."""
    make_node(tmp_path, None, role)
    instance_file = tmp_path / bootstrap.INSTANCE_ID_FILE.lstrip("/")
    instance_file.parent.mkdir(parents=True)
    instance_file.write_text(instance + "\n")
    return tmp_path


def failed_marker(root: Path) -> str:
    return (root / bootstrap.BOOTSTRAP_FAILED.lstrip("/")).read_text()


def test_a_failed_worker_step_is_named_and_the_instance_replaced(aws, tmp_path, capsys) -> None:
    instance = asg_with_instance(aws)
    root = boot_root(tmp_path, "train", instance)
    argv = ["run", sys.executable, "-c", "import sys; sys.exit(3)"]
    code = bootstrap.main(argv, session=aws, root=str(root))
    assert code == 1
    step = " ".join(argv[1:])
    assert f"FAILED step `{step}`: exit status 3" in capsys.readouterr().err
    assert f"step `{step}`: exit status 3" in failed_marker(root)
    assert health_status(aws, instance) == "UNHEALTHY"
    assert not (root / bootstrap.BOOTSTRAP_DONE.lstrip("/")).exists()


def test_a_step_that_passes_leaves_no_mark(aws, tmp_path) -> None:
    instance = asg_with_instance(aws)
    root = boot_root(tmp_path, "train", instance)
    assert bootstrap.main(["run", sys.executable, "-c", "pass"], session=aws, root=str(root)) == 0
    assert not (root / bootstrap.BOOTSTRAP_FAILED.lstrip("/")).exists()
    assert health_status(aws, instance) == "HEALTHY"
    assert bootstrap.main(["done"], session=aws, root=str(root)) == 0
    assert (root / bootstrap.BOOTSTRAP_DONE.lstrip("/")).read_text().strip().endswith("done")


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


HOLD_LOCK = """
import fcntl, sys
with open(sys.argv[1], "a") as handle:
    fcntl.lockf(handle, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_packages_wait_for_the_dpkg_lock(tmp_path: Path) -> None:
    """Another process holds the dpkg lock (as unattended-upgrades does at first boot): apt-get
    runs only once it is released."""
    lock = tmp_path / "lock-frontend"
    lock.touch()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        events: list[str] = []

        def sleep(_seconds: float) -> None:
            events.append("wait")
            if events.count("wait") == 3 and holder.poll() is None:
                holder.stdin.write("\n")
                holder.stdin.flush()
                holder.wait(timeout=10)

        def run(cmd, env=None, check=False):
            events.append(cmd[-1] if cmd[-1] == "update" else "install")
            assert env["DEBIAN_FRONTEND"] == "noninteractive"
            assert "DPkg::Lock::Timeout=1200" in cmd
            return subprocess.CompletedProcess(cmd, 0, "", "")

        bootstrap.packages(["munge", "slurmd"], run=run, locks=[str(lock)], sleep=sleep)
        assert events == ["wait", "wait", "wait", "update", "install"]
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(timeout=10)


def test_packages_give_up_on_a_lock_never_released_and_on_apt_errors(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    lock.touch()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        with pytest.raises(bootstrap.StepFailed, match="still held after 20 s"):
            bootstrap.packages(
                ["x"], run=Runner(), locks=[str(lock)], sleep=lambda _s: None, timeout=20
            )
    finally:
        holder.kill()
        holder.wait(timeout=10)
    failing = Runner(fail={"apt-get"})
    with pytest.raises(bootstrap.StepFailed, match="apt-get update failed"):
        bootstrap.packages(
            ["x"], run=lambda cmd, **_: failing(cmd, False), locks=[str(lock)], sleep=lambda _s: 0
        )
    assert len(failing.calls) == 1  # the lock was free: a real apt error, not retried
