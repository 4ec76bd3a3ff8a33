"""Every rendered cloud-init document passes `cloud-init schema` (cloud-init 22.4 here;
Ubuntu 24.04 runs a newer one). With CI=true a missing cloud-init fails the test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from slurmstack.contract import BOOTSTRAP_PATH, HEAD_ROLE
from slurmstack.plan import role_image_contract
from slurmstack.render import roles, user_data
from slurmstack.stack.user_data import ec2_user_data
from support.examples import EXAMPLE_IDS, example_plan

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
        ]


def steps(plan, role: str) -> list[list[str]]:
    """The runcmd entries after `set -eu`, each through the bootstrap runner."""
    runcmd = yaml.safe_load(user_data(plan, role))["runcmd"]
    assert runcmd[0] == "set -eu"
    # Every step after `set -eu` runs through the runner, the image check first.
    first = next(i for i, e in enumerate(runcmd) if e[0] == Path(BOOTSTRAP_PATH).name)
    for entry in runcmd[first:]:
        assert isinstance(entry, list) and entry[0] == Path(BOOTSTRAP_PATH).name, entry
    return [entry[1:] for entry in runcmd[first:]]


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_every_boot_step_runs_through_the_runner(example: str) -> None:
    """So a failing step is named on the console and in the failed marker, and a worker whose
    boot fails marks itself Unhealthy (slurmstack.node.bootstrap). The image contract is
    checked first; nothing is installed: no packages module, no apt anywhere in the document."""
    plan = example_plan(example)
    for role in roles(plan):
        doc = yaml.safe_load(user_data(plan, role))
        assert "packages" not in doc and "package_update" not in doc
        ran = steps(plan, role)
        assert ran[0] == ["check", *role_image_contract(plan, role)]
        agent_steps = [i for i, step in enumerate(ran) if step[1:2] == ["slurmstack-node"]]
        assert ran.index(["install"]) < min(agent_steps)
        if role != HEAD_ROLE:
            # slurmd starts, then `joined` lets the group count the node in service (its
            # launch lifecycle hook), then the boot is done.
            assert ["done"] in ran
            assert ran[-2] == ["run", "slurmstack-node", "joined"]
            assert ran[-3] == ["run", "systemctl", "enable", "--now", "slurmstack-slurmd.service"]


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
        # Mounts last, but for the example jobs' directories on them (job-dirs).
        mounts = ran.index(["run", "slurmstack-node", "mounts"])
        job_dirs = [["run", "slurmstack-node", "job-dirs"]] if plan.lustre else []
        assert mounts > start and ran[mounts + 1 :] == job_dirs
    else:
        assert ["run", "slurmstack-node", "mounts"] not in ran


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_the_rendered_cloud_init_installs_nothing(example: str) -> None:
    """Pools and the head: no packages, no apt source, no apt or dpkg command, nothing fetched
    but the agent from the cluster's own config store."""
    plan = example_plan(example)
    for role in roles(plan):
        doc = yaml.safe_load(user_data(plan, role))
        assert not {"packages", "package_update", "package_upgrade", "apt", "snap"} & set(doc)
        commands = [e if isinstance(e, str) else " ".join(map(str, e)) for e in doc["runcmd"]]
        for command in commands:
            assert not re.search(r"\b(apt-get|apt|dpkg|pip3?|curl|wget)\b", command), command
        assert all(not f["path"].startswith("/etc/apt") for f in doc["write_files"])


def test_schema_check_catches_an_invalid_document(tmp_path: Path) -> None:
    """The validator is not a rubber stamp: a wrong type fails it."""
    path = tmp_path / "bad.yaml"
    path.write_text("#cloud-config\nruncmd: 5\npackages: {a: b}\n")
    result = schema(path)
    assert result.returncode != 0


# cloud-init's own reading of raw user data (cloudinit.user_data.convert_string): gzip is
# detected and joined member by member; a stream it cannot read would silently be kept as
# compressed bytes (decomp_gzip is quiet by default), so the payload is compared in full.
READ_AS_CLOUD_INIT = """
import sys
from cloudinit.user_data import convert_string
sys.stdout.buffer.write(convert_string(open(sys.argv[1], "rb").read()).get_payload(decode=True))
"""


@pytest.mark.parametrize("example", ["p5-training", "cpu-hpc"])
def test_cloud_init_reads_the_compressed_user_data(example: str, tmp_path: Path) -> None:
    python = Path(cloud_init()).read_text().splitlines()[0].removeprefix("#!").split()[0]
    plan = example_plan(example)
    for role in roles(plan):
        path = tmp_path / f"{role}.gz"
        path.write_bytes(ec2_user_data(plan, role))
        result = subprocess.run(
            [python, "-c", READ_AS_CLOUD_INIT, str(path)],
            capture_output=True,
            timeout=60,
            check=True,
        )
        assert result.stdout.decode() == user_data(plan, role), role


TEAM = Path(__file__).resolve().parents[1] / "vcluster" / "definitions" / "team.yaml"
DAEMONS = ("slurmctld.service", "slurmstack-slurmd.service", "slurmstack-sackd.service")


def test_a_team_clusters_documents_pass_schema_and_make_people_before_slurm(
    tmp_path: Path,
) -> None:
    """A cluster with people and a login pool (the team scenarios' definition): every role's
    document, the login pool's too, is valid cloud-config, and every node makes the people's
    accounts (identities) before it starts its Slurm daemon, which runs their jobs or submits
    them (slurmctld resolves a job's uid on the head, slurmd runs it under that uid)."""
    from slurmstack.loader import load_file
    from slurmstack.plan import build_plan

    loaded = load_file(TEAM)
    assert loaded.spec is not None, loaded.findings
    plan = build_plan(loaded.spec)
    assert "login/login" in roles(plan)
    for role in roles(plan):
        path = tmp_path / f"{role.replace('/', '-')}.yaml"
        path.write_text(user_data(plan, role))
        result = schema(path)
        assert result.returncode == 0 and "Valid cloud-config" in result.stdout, (role, result)
        ran = steps(plan, role)
        people = ran.index(["run", "slurmstack-node", "identities"])
        started = [i for i, step in enumerate(ran) if step[-1:] and step[-1] in DAEMONS]
        assert started and people < min(started), (role, ran)
        assert ["done"] in ran
