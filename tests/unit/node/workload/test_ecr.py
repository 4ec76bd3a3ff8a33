"""Pulls from the account's ECR for job users: the root timer's token on the node (moto's ECR),
and a user's enroot credentials pointing at it."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from slurmstack.contract import ECR_PASSWORD_FILE, ECR_REGISTRY_FILE
from slurmstack.node.context import AgentError
from slurmstack.node.workload import ecr
from support.node import make_node

pytestmark = pytest.mark.workload


def test_the_token_lands_where_job_users_read_it(aws, tmp_path: Path) -> None:
    node = make_node(tmp_path, aws, "train")
    registry = ecr.ecr_token(node)
    assert registry == "123456789012.dkr.ecr.us-east-1.amazonaws.com"  # moto's account
    password = tmp_path / ECR_PASSWORD_FILE.lstrip("/")
    assert password.read_text() == "123456789012-auth-token"  # "AWS:<password>", decoded
    assert (tmp_path / ECR_REGISTRY_FILE.lstrip("/")).read_text() == registry + "\n"
    for path in (password, tmp_path / ECR_REGISTRY_FILE.lstrip("/")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644  # job users read it, only root writes


def test_a_user_is_pointed_at_the_token_once(aws, tmp_path: Path) -> None:
    node = make_node(tmp_path, aws, "train")
    ecr.ecr_token(node)
    home = tmp_path / "home/alice"
    credentials = home / ".config/enroot/.credentials"
    credentials.parent.mkdir(parents=True)
    credentials.write_text("machine nvcr.io login $oauthtoken password abc\n")
    env = {"HOME": "/home/alice"}
    path, changed = ecr.ecr_login(node, env)
    assert path == "/home/alice/.config/enroot/.credentials" and changed
    lines = credentials.read_text().splitlines()
    assert lines == [
        "machine nvcr.io login $oauthtoken password abc",  # the user's own lines stay
        "machine 123456789012.dkr.ecr.us-east-1.amazonaws.com login AWS password "
        f"$(cat {ECR_PASSWORD_FILE})",
    ]
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert ecr.ecr_login(node, env) == (path, False)  # nothing to change
    # enroot evaluates a password that starts with "$" (its common::evalnetrc runs `echo` on
    # the rest of the line): the line yields the node's current token.
    token_file = str(tmp_path / ECR_PASSWORD_FILE.lstrip("/"))
    password = lines[1].split(" password ", 1)[1].replace(ECR_PASSWORD_FILE, token_file)
    shown = subprocess.run(["sh", "-c", f"echo {password}"], capture_output=True, text=True)
    assert shown.stdout.strip() == "123456789012-auth-token"


def test_enroot_config_path_and_xdg_are_honoured() -> None:
    assert ecr.credentials_path({"ENROOT_CONFIG_PATH": "/x/enroot"}) == "/x/enroot/.credentials"
    assert (
        ecr.credentials_path({"HOME": "/h", "XDG_CONFIG_HOME": "/h/cfg"})
        == "/h/cfg/enroot/.credentials"
    )
    assert ecr.credentials_path({"HOME": "/h"}) == "/h/.config/enroot/.credentials"


def test_without_a_token_the_user_is_told_what_to_ask_for(aws, tmp_path: Path) -> None:
    node = make_node(tmp_path, aws, "train")
    with pytest.raises(AgentError, match=r"systemctl enable --now slurmstack-ecr-token\.timer"):
        ecr.ecr_login(node, {"HOME": "/home/bob"})
    assert not os.path.exists(tmp_path / "home/bob")
