"""munge-key: the munge key from Secrets Manager, 0400, owned by munge, never printed."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from slurmstack.contract import bootstrap_env_text
from slurmstack.node import cli, context
from slurmstack.node.boot import munge
from slurmstack.node.boot.munge import MUNGE_KEY
from slurmstack.node.context import AgentError, Context
from slurmstack.render import bootstrap_env
from support.node import PLAN, REGION, make_node


def test_munge_key_comes_from_secrets_manager(aws, tmp_path: Path) -> None:
    key = os.urandom(1024)
    aws.client("secretsmanager").create_secret(Name=PLAN.munge_secret_name, SecretBinary=key)
    path = munge.munge_key(make_node(tmp_path, aws, "train"))
    assert path.read_bytes() == key
    assert os.stat(path).st_mode & 0o777 == 0o400


def test_munge_key_refuses_a_short_key(aws, tmp_path: Path) -> None:
    aws.client("secretsmanager").create_secret(Name=PLAN.munge_secret_name, SecretBinary=b"x")
    with pytest.raises(AgentError, match="at least 32"):
        munge.munge_key(make_node(tmp_path, aws, "train"))


# A uid/gid that is not the test's own, so the ownership check cannot pass by accident (as
# root; otherwise the test's own ids, the only ones it may give a file).
MUNGE_IDS = (4242, 4343) if os.geteuid() == 0 else (os.getuid(), os.getgid())


def node(tmp_path: Path, session: boto3.session.Session, looked_up: list[str]) -> Context:
    env = tmp_path / "etc/slurmstack/bootstrap.env"
    env.parent.mkdir(parents=True, exist_ok=True)
    env.write_text(bootstrap_env_text(bootstrap_env(PLAN, "train")))

    def owner(name: str) -> tuple[int, int]:
        looked_up.append(name)
        return MUNGE_IDS

    return Context(root=tmp_path, session=session, owner=owner, sleep=lambda _s: None)


@pytest.fixture
def session():
    with mock_aws():
        yield boto3.session.Session(region_name=REGION)


def forms(key: bytes) -> list[str]:
    """How a key could show up in text."""
    return [key.hex(), base64.b64encode(key).decode(), key.decode("latin-1")]


def test_key_is_0400_owned_by_munge_and_never_readable_by_others(
    session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = os.urandom(1024)
    session.client("secretsmanager").create_secret(Name=PLAN.munge_secret_name, SecretBinary=key)
    looked_up: list[str] = []
    modes: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:  # the moment the bytes are on disk, before any chmod
        modes.append(stat.S_IMODE(os.fstat(fd).st_mode))
        real_fsync(fd)

    monkeypatch.setattr(context.os, "fsync", fsync)
    old_umask = os.umask(0)  # the worst a caller could run with
    try:
        path = munge.munge_key(node(tmp_path, session, looked_up))
    finally:
        os.umask(old_umask)
    assert path == tmp_path / MUNGE_KEY.lstrip("/")
    assert path.read_bytes() == key
    info = os.stat(path)
    assert stat.S_IMODE(info.st_mode) == 0o400
    assert looked_up == ["munge"] and (info.st_uid, info.st_gid) == MUNGE_IDS
    assert modes and all(mode & 0o077 == 0 for mode in modes), [oct(m) for m in modes]
    assert [p.name for p in path.parent.iterdir()] == ["munge.key"]  # no temporary left


def test_key_is_never_printed(session, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    key = os.urandom(1024)
    client = session.client("secretsmanager")
    client.create_secret(Name=PLAN.munge_secret_name, SecretBinary=key)
    agent = node(tmp_path, session, [])
    assert cli.main(["--root", str(tmp_path), "munge-key"], ctx=agent) == 0
    # A refused key is reported by its length, not its content.
    short = os.urandom(16)
    client.put_secret_value(SecretId=PLAN.munge_secret_name, SecretBinary=short)
    assert cli.main(["--root", str(tmp_path), "munge-key"], ctx=agent) == 1
    out, err = capfd.readouterr()
    assert "16 bytes" in err
    for secret in (key, short):
        for text in forms(secret):
            assert text not in out and text not in err
