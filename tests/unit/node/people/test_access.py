"""The people room's files: homes, keys, sudo, ssm-user, the host key and SSSD's files, in a
node tree under the test's directory (moto for Secrets Manager)."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from slurmstack.contract import (
    ADMINS_SUDOERS_PATH,
    AUTHORIZED_KEYS_DIR,
    LOGIN_HOST_KEY_PATH,
    SSM_SUDOERS_PATH,
    Directory,
    Identities,
    Person,
)
from slurmstack.node.context import Context
from slurmstack.node.people import access, directory

ALICE = Person("alice", 2001, "alice", 2001, ssh_keys=("ssh-ed25519 AAAA alice",), admin=True)
BOB = Person("bob", 2002, "bob", 2002, ssh_keys=("ssh-ed25519 BBBB bob",))


def node(tmp_path: Path, mounted: bool = True) -> Context:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/mounts").write_text("fs-1.efs:/ /home nfs4 rw 0 0\n" if mounted else "")
    (tmp_path / "etc/skel").mkdir(parents=True)
    (tmp_path / "etc/skel/.bashrc").write_text("# skel\n")
    (tmp_path / "home").mkdir()
    return Context(
        root=tmp_path,
        run=lambda cmd, check=True: subprocess.run(
            cmd, check=check, capture_output=True, text=True
        ),
    )


def test_homes_are_made_once_owner_only_with_skel(tmp_path: Path) -> None:
    ctx = node(tmp_path)
    wanted = Identities(home="/home")
    assert access.homes(ctx, wanted, (ALICE, BOB)) == ["alice", "bob"]
    home = tmp_path / "home/alice"
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert (home.stat().st_uid, home.stat().st_gid) == (2001, 2001)
    assert (home / ".bashrc").stat().st_uid == 2001
    # The owner opens it up; the next sync leaves it as it is.
    home.chmod(0o750)
    assert access.homes(ctx, wanted, (ALICE, BOB)) == []
    assert stat.S_IMODE(home.stat().st_mode) == 0o750


def test_no_homes_on_a_shared_home_that_is_not_mounted(tmp_path: Path) -> None:
    ctx = node(tmp_path, mounted=False)
    assert access.homes(ctx, Identities(home="/home"), (ALICE,)) == []
    assert not (tmp_path / "home/alice").exists()


def test_keys_of_active_people_only_and_root_owned(tmp_path: Path) -> None:
    ctx = node(tmp_path)
    access.authorized_keys(ctx, (ALICE, BOB))
    keys = tmp_path / AUTHORIZED_KEYS_DIR.lstrip("/")
    assert (keys / "bob").read_text() == "ssh-ed25519 BBBB bob\n"
    assert (keys / "bob").stat().st_uid == 0
    access.authorized_keys(ctx, (ALICE,))  # bob removed or locked
    assert sorted(p.name for p in keys.iterdir()) == ["alice"]


def test_sudo_for_admins_only_and_none_for_ssm_user(tmp_path: Path) -> None:
    ctx = node(tmp_path)
    wanted = Identities(
        home="/home", directory=Directory("ldap", ("ldaps://x",), "dc=x", admin_group="ops")
    )
    assert access.admins_sudoers(ctx, wanted, (ALICE, BOB))
    text = (tmp_path / ADMINS_SUDOERS_PATH.lstrip("/")).read_text()
    assert "alice ALL=(ALL:ALL) NOPASSWD: ALL" in text and "%ops ALL" in text and "bob" not in text
    assert stat.S_IMODE((tmp_path / ADMINS_SUDOERS_PATH.lstrip("/")).stat().st_mode) == 0o440
    assert not access.admins_sudoers(ctx, wanted, (ALICE, BOB))  # unchanged
    assert access.admins_sudoers(ctx, Identities(home="/home"), (BOB,))  # alice gone: no file
    assert not (tmp_path / ADMINS_SUDOERS_PATH.lstrip("/")).exists()
    # The SSM agent's own grant is replaced by a file without one.
    ssm = tmp_path / SSM_SUDOERS_PATH.lstrip("/")
    ssm.parent.mkdir(parents=True, exist_ok=True)
    ssm.write_text("ssm-user ALL=(ALL) NOPASSWD:ALL\n")
    access.ssm_user_without_sudo(ctx)
    grants = [line for line in ssm.read_text().splitlines() if not line.startswith("#")]
    assert grants == []


def test_the_pool_shares_one_host_key(tmp_path: Path, aws) -> None:
    secret = "slurmstack/c/login/login/ssh-host-key"
    aws.client("secretsmanager").create_secret(Name=secret)  # the stack's: no value yet
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    keys = []
    for root in (first, second):
        ctx = Context(root=root, session=aws)
        (root / "etc/slurmstack").mkdir(parents=True)
        (root / "etc/slurmstack/bootstrap.env").write_text(
            "SLURMSTACK_CLUSTER=c\nSLURMSTACK_REGION=us-east-1\nSLURMSTACK_ROLE=login/login\n"
            "SLURMSTACK_PARAMETER_PREFIX=/slurmstack/c\nSLURMSTACK_MUNGE_SECRET=m\n"
            "SLURMSTACK_MANIFEST_PARAMETER=/m\nSLURMSTACK_BUCKET_PARAMETER=/b\n"
        )
        assert access.host_key(ctx, secret)
        path = root / LOGIN_HOST_KEY_PATH.lstrip("/")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        keys.append((path.read_text(), Path(f"{path}.pub").read_text()))
        assert not access.host_key(ctx, secret)  # already in place
    assert keys[0] == keys[1] and keys[0][1].startswith("ssh-ed25519 ")


def test_sssd_conf_verifies_the_servers_and_maps_attributes() -> None:
    d = Directory(
        "ldap",
        ("ldap://ldap.example.com",),
        "dc=example,dc=com",
        bind_dn="cn=sssd,dc=example,dc=com",
        access_group="hpc",
        attributes={"user_name": "uid", "ssh_public_key": "sshPublicKey"},
    )
    text = directory.sssd_conf(d, "s3cret")
    assert "ldap_tls_reqcert = demand" in text and "ldap_id_use_start_tls = true" in text
    assert "ldap_default_authtok = s3cret" in text and "simple_allow_groups = hpc" in text
    assert "ldap_user_ssh_public_key = sshPublicKey" in text


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "passwd: files systemd\ngroup: files\n",
            "passwd: files systemd sss\ngroup: files sss\nshadow: files sss\n",
        ),
        ("passwd: files sss\n", "passwd: files sss\ngroup: files sss\nshadow: files sss\n"),
    ],
)
def test_nsswitch_reads_local_accounts_first(before: str, after: str) -> None:
    assert directory.with_sss(before) == after
