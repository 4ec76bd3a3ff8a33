"""The first-boot runner (slurmstack/node/bootstrap.py): the image contract checked and nothing
installed, the agent installed from the config store and checked, a failed step named, recorded
and, on a worker, an Unhealthy instance."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurmstack.contract import (
    AGENT_LIB_DIR,
    AGENT_PATH,
    HEALTH_CHECK_PROGRAM,
    PYXIS_PLUGIN,
    ImageItem,
)
from slurmstack.node import bootstrap
from slurmstack.plan import role_image_contract
from slurmstack.render import AGENT_DIR, PACKAGE_DIR, agent_modules, role_files, roles
from support.node import (
    PLAN,
    NoAws,
    Runner,
    asg_with_instance,
    make_node,
    publish_config,
    tamper,
)


def health_status(session, instance: str) -> str:
    status = session.client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance])
    return str(status["AutoScalingInstances"][0]["HealthStatus"]).upper()


def test_bootstrap_installs_the_agent_from_the_store(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    node = make_node(tmp_path, aws, "train")
    target = bootstrap.install(node.bootstrap_env(), aws, root=str(tmp_path), poll=0)
    assert target == str(tmp_path / AGENT_PATH.lstrip("/"))
    files = role_files(PLAN, "train")
    # The HealthCheckProgram's launcher arrives with sync-config (slurmd needs it, not the boot).
    assert HEALTH_CHECK_PROGRAM in files
    agent = {p: t for p, t in files.items() if p.startswith(AGENT_LIB_DIR + "/") or p == AGENT_PATH}
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
    "path", [AGENT_PATH, f"{AGENT_DIR}/node/context.py", f"{AGENT_DIR}/contract/__init__.py"]
)
def test_bootstrap_refuses_a_tampered_agent(aws, tmp_path: Path, path: str) -> None:
    publish_config(aws, "train")
    tamper(aws, "train", path, b"evil")
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
    """Also where no node has its settings (the image's test phase): no bootstrap.env."""
    items = ["cmd:slurmd", "cmd:munged", f"file:{PYXIS_PLUGIN}", "py:json"]
    image_tree(tmp_path, ["slurmd", "munged"], (PYXIS_PLUGIN,))
    assert bootstrap.missing_from_image(items, root=str(tmp_path)) == []
    run = Runner()
    assert bootstrap.main(["check", *items], root=str(tmp_path), run=run) == 0
    assert run.calls == []  # nothing run, nothing installed
    assert not (tmp_path / bootstrap.BOOTSTRAP_FAILED.lstrip("/")).exists()


def test_check_names_what_the_image_lacks_and_marks_a_worker_unhealthy(aws, tmp_path: Path) -> None:
    """An image of one's own without enroot or boto3: the boot stops at the check, says what is
    missing and where the contract is written, and the worker is replaced."""
    instance = asg_with_instance(aws)
    root = boot_root(tmp_path, "train", instance)
    image_tree(root, ["slurmd"])
    items = ["cmd:slurmd", "cmd:enroot", "py:no_such_module_here"]
    run = Runner()
    assert bootstrap.main(["check", *items], session=aws, root=str(root), run=run) == 1
    failed = failed_marker(root)
    assert "step `check`: the image lacks cmd:enroot, py:no_such_module_here" in failed
    assert "image contract" in failed
    assert health_status(aws, instance) == "UNHEALTHY"
    assert not any(c and c[0] in ("apt-get", "apt", "dpkg") for c in run.calls)


def test_check_reads_the_items_the_plan_writes() -> None:
    """Every item of every role's contract is of a kind the check knows: none is refused as
    unknown (which would fail every boot)."""
    for role in roles(PLAN):
        for item in role_image_contract(PLAN, role):
            kind, _, name = item.partition(":")
            assert kind in set(ImageItem) and name, item
    with pytest.raises(bootstrap.StepFailed, match="unknown contract item 'deb:slurmd'"):
        bootstrap.missing_from_image(["deb:slurmd"])


def test_the_bootstrap_has_no_package_step_left() -> None:
    source = Path(bootstrap.__file__).read_text()
    assert "apt-get" not in source and "def packages" not in source
    assert bootstrap.main(["packages", "munge"], root="/nonexistent") == 1


def test_a_head_image_of_ones_own_without_mariadb_fails_its_check(tmp_path: Path) -> None:
    """The example's head keeps its accounting in the local MariaDB: an image of one's own
    that holds all but MariaDB stops the head's boot at the check, naming MariaDB's commands
    (and the head stays up for an operator)."""
    items = role_image_contract(PLAN, "head")
    assert {"cmd:slurmdbd", "cmd:mariadbd", "cmd:mariadb-install-db"} <= set(items)
    root = boot_root(tmp_path, "head")
    present = [i.partition(":")[2] for i in items if i.startswith("cmd:") and "mariadb" not in i]
    image_tree(root, present, tuple(i.partition(":")[2] for i in items if i.startswith("file:")))
    run = Runner()
    assert bootstrap.main(["check", *items], session=NoAws(), root=str(root), run=run) == 1
    assert (
        "step `check`: the image lacks cmd:mariadbd, cmd:mariadb, cmd:mariadb-install-db"
        in failed_marker(root)
    )
    assert run.calls == []
    # With them, it passes.
    image_tree(root, ["mariadbd", "mariadb", "mariadb-install-db"])
    assert bootstrap.main(["check", *items], session=NoAws(), root=str(root), run=run) == 0
