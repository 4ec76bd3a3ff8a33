"""Every rendered cloud-init document passes `cloud-init schema` (cloud-init 22.4 here;
Ubuntu 24.04 runs a newer one). With CI=true a missing cloud-init fails the test."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers_examples import EXAMPLE_IDS, example_plan
from slurmstack.render import (
    APT_LOCK_CONF_PATH,
    APT_LOCK_TIMEOUT_SECONDS,
    BOOTSTRAP_PATH,
    HEAD_ROLE,
    USER_DATA_LIMIT,
    roles,
    user_data,
)

pytestmark = pytest.mark.cloudinit


def cloud_init() -> str:
    path = shutil.which("cloud-init")
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but cloud-init is not installed (apt: cloud-init)")
        pytest.skip("cloud-init is not installed")
    return path


def schema(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [cloud_init(), "schema", "--config-file", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_every_document_passes_schema(example: str, tmp_path: Path) -> None:
    plan = example_plan(example)
    for role in roles(plan):
        text = user_data(plan, role)
        assert text.startswith("#cloud-config\n")
        assert len(text.encode()) < USER_DATA_LIMIT
        path = tmp_path / f"{role}.yaml"
        path.write_text(text)
        result = schema(path)
        assert result.returncode == 0, (role, result.stdout, result.stderr)
        assert "Valid cloud-config" in result.stdout
        # YAML as cloud-init reads it: the files it writes are the ones rendered.
        doc = yaml.safe_load(text)
        paths = [f["path"] for f in doc["write_files"]]
        assert paths == [
            "/etc/slurmstack/bootstrap.env",
            BOOTSTRAP_PATH,
            "/etc/slurmstack/imds-firewall.nft",
            "/etc/systemd/system/slurmstack-imds-firewall.service",
            APT_LOCK_CONF_PATH,
        ]


def steps(plan, role: str) -> list[list[str]]:
    """The runcmd entries after `set -eu`, each through the bootstrap runner."""
    runcmd = yaml.safe_load(user_data(plan, role))["runcmd"]
    assert runcmd[0] == "set -eu"
    # The metadata firewall is loaded first, before the runner (and its AWS calls) run.
    first = next(i for i, e in enumerate(runcmd) if e[0] == Path(BOOTSTRAP_PATH).name)
    for entry in runcmd[first:]:
        assert isinstance(entry, list) and entry[0] == Path(BOOTSTRAP_PATH).name, entry
    return [entry[1:] for entry in runcmd[first:]]


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_every_boot_step_runs_through_the_runner(example: str) -> None:
    """So a failing step is named on the console and in the failed marker, and a worker whose
    boot fails marks itself Unhealthy (slurmstack.node.bootstrap). Packages come first, from
    the runner, which waits for apt's lock; no cloud-init packages module (it waits 30 s)."""
    plan = example_plan(example)
    for role in roles(plan):
        doc = yaml.safe_load(user_data(plan, role))
        assert "packages" not in doc and "package_update" not in doc
        ran = steps(plan, role)
        assert ran[0][0] == "packages" and "munge" in ran[0]
        agent_steps = [i for i, step in enumerate(ran) if step[1:2] == ["slurmstack-node"]]
        assert ran.index(["install"]) < min(agent_steps)
        if role != HEAD_ROLE:
            assert ran[-1] == ["done"]
            assert ran[-2] == ["run", "systemctl", "enable", "--now", "slurmstack-slurmd.service"]


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_the_head_starts_slurmctld_before_it_mounts_shared_storage(example: str) -> None:
    """A file system still being created (or failing) does not hold up slurmctld; and the
    done mark (after which the apply-config association acts) comes before the last sync of
    the configuration, so no change pushed during the bootstrap is lost."""
    plan = example_plan(example)
    ran = steps(plan, HEAD_ROLE)
    start = ran.index(["run", "systemctl", "enable", "--now", "slurmctld.service"])
    done = ran.index(["done"])
    last_sync = max(
        i for i, step in enumerate(ran) if step == ["run", "slurmstack-node", "sync-config"]
    )
    assert done < last_sync < start
    assert ran.index(["run", "slurmstack-node", "state-volume"]) < done
    if plan.mounts:
        assert ran.index(["run", "slurmstack-node", "mounts"]) == len(ran) - 1 > start
    else:
        assert ["run", "slurmstack-node", "mounts"] not in ran


def test_apt_reads_the_lock_timeout(tmp_path: Path) -> None:
    """The drop-in as apt itself reads it (apt-config): later apt runs wait for the lock."""
    apt_config = shutil.which("apt-config")
    if apt_config is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but apt-config is missing")
        pytest.skip("apt-config is not installed")
    doc = yaml.safe_load(user_data(example_plan("p5-training"), HEAD_ROLE))
    (entry,) = [f for f in doc["write_files"] if f["path"] == APT_LOCK_CONF_PATH]
    conf = tmp_path / "90slurmstack"
    conf.write_text(entry["content"])
    out = subprocess.run(
        [apt_config, "-c", str(conf), "shell", "TIMEOUT", "DPkg::Lock::Timeout"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"TIMEOUT='{APT_LOCK_TIMEOUT_SECONDS}'"


def test_schema_check_catches_an_invalid_document(tmp_path: Path) -> None:
    """The validator is not a rubber stamp: a wrong type fails it."""
    path = tmp_path / "bad.yaml"
    path.write_text("#cloud-config\nruncmd: 5\npackages: {a: b}\n")
    result = schema(path)
    assert result.returncode != 0
