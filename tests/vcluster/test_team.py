"""People and login nodes on the virtual cluster (marker `team`): alice and bob, declared in
the definition, log in to a login node with their own keys through a real sshd in the login
node's namespace, submit jobs that run under their own uid on a worker and are seen by sacct
and sshare on the login node (slurmdbd and MariaDB on the head), cannot read each other's
home, cannot sudo (but alice, an admin, can), cannot reach the metadata service; bob removed
from the definition is locked out of every node without a reboot, his files kept, his
association removed, alice's running job untouched; a replaced login node offers the host key
users already trust.

One cluster (definitions/team.yaml) for the module: the scenarios run in this file's order.
"""

from __future__ import annotations

import copy
import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from slurmstack.contract import LOGIN_HOST_KEY_PATH
from vcluster.conftest import require_host
from vcluster.harness import VirtualCluster, wait_until
from vcluster.harness.node import Node

pytestmark = [pytest.mark.vcluster, pytest.mark.team]

DEFINITION = Path(__file__).resolve().parent / "definitions" / "team.yaml"
PEOPLE = ("alice", "bob")
ALIAS = "vt-login"  # the pool's HostKeyAlias, as `slurmstack ssh-config` writes it


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each person's own key pair (the private half stays with the test)."""
    if subprocess.run(["which", "ssh-keygen"], capture_output=True).returncode:
        require_host()
        pytest.fail("ssh-keygen (openssh-client) is missing")
    directory = tmp_path_factory.mktemp("people")
    out = {}
    for name in PEOPLE:
        key = directory / name
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True
        )
        out[name] = key
    (directory / "known_hosts").touch()
    return out


@pytest.fixture(scope="module")
def team(
    keys: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VirtualCluster]:
    require_host()
    for binary in ("/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/sudo"):
        if not os.path.exists(binary):
            pytest.fail(
                f"the team scenarios need {binary} (apt: openssh-server openssh-client sudo)"
            )
    definition = yaml.safe_load(DEFINITION.read_text())
    for user in definition["users"]:
        user["ssh_keys"] = [Path(f"{keys[user['name']]}.pub").read_text().strip()]
    path = tmp_path_factory.mktemp("team") / "team.yaml"
    path.write_text(yaml.safe_dump(definition))
    with VirtualCluster(path, keep=os.environ.get("VCLUSTER_KEEP") == "1") as cluster:
        yield cluster
    assert cluster.leftovers() == []


def login_node(cluster: VirtualCluster) -> Node:
    (node,) = cluster.logins.values()
    return node


def ssh(
    cluster: VirtualCluster, keys: dict[str, Path], user: str, command: str, *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``command`` as ``user`` on the login node, over SSH with the user's own key, from
    outside the cluster's nodes (the fabric's namespace, where a laptop's connection through
    Session Manager would arrive), trusting the pool's host key by its alias."""
    known = keys[user].parent / "known_hosts"
    cmd = [
        "ip", "netns", "exec", cluster._fabric.namespace,  # type: ignore[union-attr]
        "ssh", "-i", str(keys[user]), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
        "-o", f"UserKnownHostsFile={known}", "-o", f"HostKeyAlias={ALIAS}",
        "-o", "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=10",
        f"{user}@{login_node(cluster).address}", command,
    ]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(
            f"ssh {user}: {command} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
            f"\n{login_node(cluster).logs()}"
        )
    return result


def test_people_log_in_with_their_keys_and_run_jobs_as_themselves(
    team: VirtualCluster, keys: dict[str, Path]
) -> None:
    worker = next(iter(team.workers.values()))
    for name, uid in (("alice", 2001), ("bob", 2002)):
        # The same account on the head, the worker and the login node.
        for node in (team.head, worker, login_node(team)):
            assert node is not None
            assert node.run("id", "-u", name).stdout.strip() == str(uid)
        assert ssh(team, keys, name, "id -un").stdout.strip() == name
        # A batch job from the login node runs on the worker under the person's uid.
        out = ssh(
            team,
            keys,
            name,
            "cd ~ && sbatch --wait -p cpu -o job-%j.out --wrap 'id -u; hostname' >/dev/null && "
            "cat job-*.out",
        ).stdout.split()
        assert out[0] == str(uid)
        assert out[1] == team.slurm_name(worker)
        # Accounting knows the person by the same name: sacct and sshare on the login node
        # (slurmdbd's port is open to login nodes) show their job and their share.
        wait_until(
            lambda name=name: (
                f"{name}|research|COMPLETED"  # type: ignore[misc]
                in ssh(team, keys, name, "sacct -n -X -P -o User,Account,State").stdout.split()
            ),
            f"{name}'s job in sacct",
            timeout=60,
        )
        shares = ssh(team, keys, name, "sshare -n -P -U -o Account,User").stdout.split()
        assert f"research|{name}" in shares, shares
        # srun from the login node: the step runs on the worker and calls back to srun.
        step = ssh(team, keys, name, "srun -p cpu -N1 -t 1 id -u").stdout.split()
        assert step == [str(uid)]
        # sreport reaches slurmdbd from the login node too (usage shows after its rollup).
        ssh(team, keys, name, "sreport -n -P cluster utilization")


def test_people_keep_to_their_own_homes_and_have_no_root(
    team: VirtualCluster, keys: dict[str, Path]
) -> None:
    assert ssh(team, keys, "alice", "stat -c %a ~").stdout.strip() == "700"
    assert ssh(team, keys, "alice", "echo secret > ~/notes").returncode == 0
    denied = ssh(team, keys, "bob", "cat /home/alice/notes", check=False)
    assert denied.returncode != 0 and "Permission denied" in denied.stderr
    # Only admins have sudo; alice is one.
    assert ssh(team, keys, "bob", "sudo -n true", check=False).returncode != 0
    assert ssh(team, keys, "alice", "sudo -n id -u").stdout.strip() == "0"
    # ssm-user's grant is gone on the login node.
    grant = login_node(team).run("cat", "/etc/sudoers.d/ssm-agent-users").stdout
    assert [line for line in grant.splitlines() if not line.startswith("#")] == []
    # The metadata service answers root only.
    probe = (
        'python3 -c "import urllib.request as u; u.urlopen(u.Request('
        "'http://169.254.169.254/latest/api/token', method='PUT', "
        "headers={'X-aws-ec2-metadata-token-ttl-seconds': '60'}), timeout=3)\""
    )
    assert ssh(team, keys, "bob", probe, check=False).returncode != 0
    login_node(team).run("/bin/sh", "-c", probe)  # as root: answered


def test_a_removed_person_is_locked_out_everywhere_and_keeps_their_files(
    team: VirtualCluster, keys: dict[str, Path]
) -> None:
    ssh(team, keys, "bob", "echo mine > ~/results")
    # alice's job runs across the change.
    job = ssh(team, keys, "alice", "sbatch --parsable -p cpu --wrap 'sleep 120'").stdout.strip()
    assert team.head is not None
    wait_until(
        lambda: "RUNNING" in team.head.run("squeue", "-h", "-j", job, "-o", "%T").stdout,  # type: ignore[union-attr]
        f"alice's job {job} to run",
        timeout=60,
    )
    assert ssh(team, keys, "alice", "squeue --me -h -o %i").stdout.split() == [job]
    changed: dict[str, Any] = copy.deepcopy(team.definition)
    changed["users"] = [u for u in changed["users"] if u["name"] != "bob"]
    for account in changed["slurm"]["accounting"]["accounts"]:
        account["users"] = [u for u in account["users"] if u != "bob"]
    changed["users"][0]["ssh_keys"] = [Path(f"{keys['alice']}.pub").read_text().strip()]
    team.apply_config(changed)
    refused = ssh(team, keys, "bob", "true", check=False)
    assert refused.returncode == 255, refused.stderr
    for node in (team.head, *team.workers.values(), login_node(team)):
        assert node is not None
        entry = node.run("getent", "passwd", "bob").stdout.strip().split(":")
        assert entry[2] == "2002" and entry[6] == "/usr/sbin/nologin", node.label()
        assert node.run("chage", "-l", "bob").stdout.count("Jan 02, 1970") >= 1, node.label()
    # Accounting drops his association; alice's stay.
    assoc = team.head.run(
        "sacctmgr", "-n", "-P", "show", "assoc", "where", "cluster=vt", "format=account,user"
    ).stdout.split()
    assert not [row for row in assoc if row.endswith("|bob")], assoc
    assert {"research|alice", "ops|alice"} <= set(assoc), assoc
    shared = login_node(team).run("cat", "/home/bob/results").stdout
    assert shared.strip() == "mine"
    assert "RUNNING" in team.head.run("squeue", "-h", "-j", job, "-o", "%T").stdout
    team.head.run("scancel", job)


def test_a_replaced_login_node_is_the_host_users_already_trust(
    team: VirtualCluster, keys: dict[str, Path]
) -> None:
    old = login_node(team)
    key_before = old.run("cat", f"{LOGIN_HOST_KEY_PATH}.pub").stdout
    team.kill(old)
    new = team.replace(old)
    assert new.instance_id != old.instance_id
    assert new.run("cat", f"{LOGIN_HOST_KEY_PATH}.pub").stdout == key_before
    # Strict checking against what the first connection recorded: no prompt, no warning.
    known = keys["alice"].parent / "known_hosts"
    cmd = [
        "ip", "netns", "exec", team._fabric.namespace,  # type: ignore[union-attr]
        "ssh", "-i", str(keys["alice"]), "-o", "BatchMode=yes", "-o", f"UserKnownHostsFile={known}",
        "-o", f"HostKeyAlias={ALIAS}", "-o", "StrictHostKeyChecking=yes",
        f"alice@{new.address}", "id -u; cat ~/notes",
    ]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{shlex.join(cmd)}\n{result.stderr}\n{new.logs()}"
    assert result.stdout.split() == ["2001", "secret"]
