"""People from a real directory on the virtual cluster (marker `team`): slapd serves carol and
dave over LDAPS from its own namespace (the fabric's, the VPC router's address, where a
directory reached through the VPC would answer), with a CA made by the test; the definition
names the directory, its CA and its bind secret (in the cluster's Secrets Manager before the
nodes boot). Every node's agent configures SSSD and Debian's sssd runs on each: the same ids
on the head, the worker and the login node; carol logs in to the login node over SSH with the
key the directory holds for her (a real sshd, AuthorizedKeysCommand sss_ssh_authorizedkeys),
gets a home of her own made at first login, and her job runs under her directory uid on the
worker."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from team.ldap_server import ATTRIBUTES, BASE, BIND_DN, BIND_PASSWORD, GROUP, Person, prepare, serve
from team.ldap_server import require as require_directory
from vcluster.conftest import require_host
from vcluster.harness import VirtualCluster, deploy
from vcluster.harness.node import Node

pytestmark = [pytest.mark.vcluster, pytest.mark.team]

DEFINITION = Path(__file__).resolve().parent / "definitions" / "team.yaml"
PEOPLE = {"carol": 5001, "dave": 5002}
SECRET = "ldap/sssd"
PORT = 636


def definition_with_directory(tmp: Path, keys: dict[str, Path]) -> tuple[dict[str, Any], str]:
    """definitions/team.yaml with no local people and a directory instead (its CA and the
    server's certificate made for the fabric's router address, which the directory will use),
    and the directory server's prepared work directory."""
    data: dict[str, Any] = yaml.safe_load(DEFINITION.read_text())
    data.update(name="vd", network={"vpc_cidr": "10.97.0.0/16"})
    for key in ("users", "groups"):
        del data[key]
    data["slurm"] = {"accounting": {"enabled": False}}  # shown by test_team.py
    subnet = ipaddress.IPv4Network(deploy.compute_cidr(VirtualCluster.program(data)))
    router = str(next(subnet.hosts()))
    people = [
        Person(name, uid, Path(f"{keys[name]}.pub").read_text().strip())
        for name, uid in PEOPLE.items()
    ]
    ca = prepare(tmp / "ldap", people, router)
    data["directory"] = {
        "type": "ldap",
        "uris": [f"ldaps://{router}:{PORT}"],
        "search_base": BASE,
        "bind_dn": BIND_DN,
        "bind_password_secret": SECRET,
        "ca_certificate": ca,
        "attributes": ATTRIBUTES,
    }
    return data, router


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("directory-people")
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
def cluster(
    keys: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VirtualCluster]:
    require_host()
    require_directory("ssh", "ssh-keygen")
    tmp = tmp_path_factory.mktemp("team-directory")
    data, router = definition_with_directory(tmp, keys)
    path = tmp / "team-directory.yaml"
    path.write_text(yaml.safe_dump(data))
    servers = contextlib.ExitStack()

    def directory_up(cluster: VirtualCluster) -> None:
        """What the operator has before `pulumi up`: the directory, reachable from the VPC,
        and the bind password in the secret the definition names."""
        servers.enter_context(serve(tmp / "ldap", router, PORT, cluster.fabric.namespace))
        cluster.aws.client("secretsmanager").create_secret(Name=SECRET, SecretString=BIND_PASSWORD)

    with servers:
        keep = os.environ.get("VCLUSTER_KEEP") == "1"
        with VirtualCluster(path, keep=keep, before_boot=directory_up) as virtual:
            yield virtual
        assert virtual.leftovers() == []


def login_node(cluster: VirtualCluster) -> Node:
    (node,) = cluster.logins.values()
    return node


def ssh(
    cluster: VirtualCluster, keys: dict[str, Path], user: str, command: str, *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``command`` as ``user`` on the login node, from the fabric's namespace, with the user's
    own key (which only the directory knows)."""
    cmd = [
        "ip", "netns", "exec", cluster.fabric.namespace,
        "ssh", "-i", str(keys[user]), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
        "-o", f"UserKnownHostsFile={keys[user].parent / 'known_hosts'}",
        "-o", "HostKeyAlias=vd-login", "-o", "StrictHostKeyChecking=accept-new",
        "-o", "ConnectTimeout=10", f"{user}@{login_node(cluster).address}", command,
    ]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(
            f"ssh {user}: {command} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
            f"\n{login_node(cluster).logs()}"
        )
    return result


def test_directory_people_have_the_same_ids_on_every_node(cluster: VirtualCluster) -> None:
    nodes = [cluster.head, *cluster.workers.values(), login_node(cluster)]
    group, gid = GROUP
    for name, uid in PEOPLE.items():
        entries = set()
        for node in nodes:
            assert node is not None
            entry = node.run("getent", "passwd", name, check=False).stdout.strip()
            assert entry, f"{name} unknown on {node.label()}\n{node.logs()}"
            entries.add(entry)
        assert entries == {f"{name}:*:{uid}:{gid}:{name}:/home/{name}:/bin/bash"}
    for node in nodes:
        assert node is not None
        members = node.run("getent", "group", group).stdout.strip()
        assert members.startswith(f"{group}:*:{gid}:"), node.label()
        # Not local accounts: the directory's, through SSSD.
        assert node.run("getent", "-s", "files", "passwd", "carol", check=False).returncode == 2


def test_a_directory_person_logs_in_with_its_key_and_runs_jobs_as_itself(
    cluster: VirtualCluster, keys: dict[str, Path]
) -> None:
    worker = next(iter(cluster.workers.values()))
    assert ssh(cluster, keys, "carol", "id -u").stdout.strip() == "5001"
    # The home is made at first login (pam_mkhomedir, umask 0077) on the shared /home.
    assert ssh(cluster, keys, "carol", "stat -c '%a %U' ~").stdout.strip() == "700 carol"
    out = ssh(
        cluster,
        keys,
        "carol",
        "cd ~ && sbatch --wait -p cpu -o job-%j.out --wrap 'id -u; id -g; hostname' >/dev/null"
        " && cat job-*.out",
    ).stdout.split()
    assert out == ["5001", str(GROUP[1]), cluster.slurm_name(worker)]
    ssh(cluster, keys, "carol", "echo mine > ~/notes")
    denied = ssh(cluster, keys, "dave", "cat /home/carol/notes", check=False)
    assert denied.returncode != 0 and "Permission denied" in denied.stderr
    # Nobody from the directory is an admin here (no admin_group): no sudo.
    assert ssh(cluster, keys, "dave", "sudo -n true", check=False).returncode != 0
