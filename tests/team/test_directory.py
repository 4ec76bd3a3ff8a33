"""People from a real directory through real SSSD, configured by the agent (marker `team`):
slapd serves alice and bob over LDAPS on loopback with a CA made here; the people room writes
sssd.conf (the bind password from Secrets Manager, moto's), the CA and nsswitch into a node
tree; sssd runs with that tree in a private mount namespace (the host's /etc untouched) and
answers getent and sshd's key lookup with the directory's ids and keys."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from slurmstack.contract import Directory
from slurmstack.node.context import Context
from slurmstack.node.people import directory
from team.ldap_server import (
    ATTRIBUTES,
    BASE,
    BIND_DN,
    BIND_PASSWORD,
    Person,
    free_port,
    prepare,
    require,
    serve,
)

pytestmark = pytest.mark.team

ALICE_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO7iLqfLTqwIksZZDY/0oryFx67yVKkT4qRpxyZsjSPy alice@laptop"
)


@pytest.fixture
def slapd(tmp_path: Path) -> Iterator[tuple[str, str]]:
    require("unshare")
    people = [Person("alice", 5001, ALICE_KEY), Person("bob", 5002)]
    ca = prepare(tmp_path / "ldap", people, "127.0.0.1")
    with serve(tmp_path / "ldap", "127.0.0.1", free_port()) as uri:
        yield uri, ca


def test_sssd_reads_people_and_keys_from_the_directory_as_the_agent_configures_it(
    slapd: tuple[str, str], tmp_path: Path
) -> None:
    uri, ca = slapd
    root = tmp_path / "node"
    (root / "etc").mkdir(parents=True)
    (root / "etc/nsswitch.conf").write_text("passwd: files\ngroup: files\nshadow: files\n")
    (root / "etc/pam.d").mkdir()
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        session.client("secretsmanager").create_secret(Name="ldap/sssd", SecretString=BIND_PASSWORD)
        (root / "etc/slurmstack").mkdir()
        (root / "etc/slurmstack/bootstrap.env").write_text(
            "SLURMSTACK_CLUSTER=c\nSLURMSTACK_REGION=us-east-1\nSLURMSTACK_ROLE=login/login\n"
            "SLURMSTACK_PARAMETER_PREFIX=/slurmstack/c\nSLURMSTACK_MUNGE_SECRET=m\n"
            "SLURMSTACK_MANIFEST_PARAMETER=/m\nSLURMSTACK_BUCKET_PARAMETER=/b\n"
        )
        wanted = Directory(
            kind="ldap",
            uris=(uri,),
            search_base=BASE,
            bind_dn=BIND_DN,
            bind_password_secret="ldap/sssd",
            ca_certificate=ca,
            attributes=ATTRIBUTES,
        )
        assert directory.configure(Context(root=root, session=session), wanted)
    assert "passwd: files sss" in (root / "etc/nsswitch.conf").read_text()
    script = f"""
set -e
mount --bind {root}/etc/sssd /etc/sssd
mount --bind {root}/etc/nsswitch.conf /etc/nsswitch.conf
mount -t tmpfs tmpfs /var/lib/sss
mount -t tmpfs tmpfs /run
mkdir -p /var/lib/sss/db /var/lib/sss/pipes/private /var/lib/sss/mc /var/lib/sss/pubconf
chmod 700 /var/lib/sss/pipes/private
sssd -i --logger=stderr 2>{tmp_path}/sssd.log &
for i in $(seq 1 100); do [ -S /var/lib/sss/pipes/nss ] && break; sleep 0.2; done
for i in $(seq 1 50); do getent passwd alice >/dev/null && break; sleep 0.2; done
echo "PASSWD $(getent passwd alice)"
echo "PASSWD $(getent passwd bob)"
echo "GROUP $(getent group research)"
echo "KEYS $(sss_ssh_authorizedkeys alice)"
kill %1
"""
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    log = (tmp_path / "sssd.log").read_text() if (tmp_path / "sssd.log").exists() else ""
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{log[-3000:]}"
    out = done.stdout
    assert "alice:*:5001:6000:alice:/home/alice:/bin/bash" in out, f"{out}\n{log[-3000:]}"
    assert "bob:*:5002:6000:bob:/home/bob:/bin/bash" in out
    assert "research:*:6000:" in lines.get("GROUP", "")
    assert ALICE_KEY in out
