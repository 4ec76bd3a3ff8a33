"""Pulls from the account's ECR for job users, who cannot reach the instance role.

``ecr-token`` (root, slurmstack-ecr-token.timer): the instance role's ECR token, its registry
host and password, written to ECR_TOKEN_DIR (on /run: gone at shutdown) readable by every
user of the node, renewed every ECR_TOKEN_REFRESH_HOURS (a token lasts 12). What a job on the
node may pull is what the role allows: read-only access to the account's repositories in the
cluster's Region (slurmstack.stack.policies).

``ecr-login`` (any user, `slurmstack-ecr-login`): the line enroot's documentation gives for ECR
in the user's enroot credentials (``$ENROOT_CONFIG_PATH/.credentials``, netrc), its password a
command that reads the node's current token when enroot imports an image, so the line written
once (on the shared /home) keeps working on every node as tokens renew.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlparse

from ...contract import ECR_PASSWORD_FILE, ECR_REGISTRY_FILE, ECR_TOKEN_SERVICE, ECR_TOKEN_TIMER
from ..context import AgentError, Context, write_atomic

TOKEN_USER = "AWS"  # ECR's tokens are for the user AWS (ECR User Guide, registry authentication)


def ecr_token(ctx: Context) -> str:
    """Fetch and store the pull token; returns the registry host."""
    data = ctx.aws.ecr().get_authorization_token()["authorizationData"][0]
    user, _, password = base64.b64decode(data["authorizationToken"]).decode().partition(":")
    if user != TOKEN_USER or not password:
        raise AgentError("ECR returned a token of an unexpected form")
    registry = urlparse(data["proxyEndpoint"]).netloc or data["proxyEndpoint"]
    write_atomic(ctx.path(ECR_PASSWORD_FILE), password.encode(), 0o644)
    write_atomic(ctx.path(ECR_REGISTRY_FILE), f"{registry}\n".encode(), 0o644)
    return registry


def credentials_path(env: Mapping[str, str]) -> str:
    """enroot's credentials file of the user (enroot: ENROOT_CONFIG_PATH, by default
    ${XDG_CONFIG_HOME:-$HOME/.config}/enroot)."""
    if env.get("ENROOT_CONFIG_PATH"):
        return f"{env['ENROOT_CONFIG_PATH']}/.credentials"
    home = env.get("HOME") or os.path.expanduser("~")
    config = env.get("XDG_CONFIG_HOME") or f"{home}/.config"
    return f"{config}/enroot/.credentials"


def credentials_line(registry: str) -> str:
    # enroot substitutes a password that starts with "$" (enroot doc/cmd/import.md), here
    # the node's current token; the machine line names the registry, so enroot uses it.
    return f"machine {registry} login {TOKEN_USER} password $(cat {ECR_PASSWORD_FILE})"


def ecr_login(ctx: Context, env: Mapping[str, str]) -> tuple[str, bool]:
    """Add (or refresh) the registry's line in the user's enroot credentials; returns the
    file and whether it changed."""
    registry_file = ctx.path(ECR_REGISTRY_FILE)
    if not registry_file.exists():
        raise AgentError(
            f"no ECR token on this node yet ({ECR_REGISTRY_FILE}): an administrator runs "
            f"`systemctl enable --now {ECR_TOKEN_TIMER}` (and looks at `journalctl -u "
            f"{ECR_TOKEN_SERVICE}` if it stays missing)"
        )
    registry = registry_file.read_text().strip()
    path = credentials_path(env)
    target = ctx.path(path)
    old = target.read_text() if target.exists() else ""
    kept = [line for line in old.splitlines() if line.split()[:2] != ["machine", registry]]
    new = "\n".join([*kept, credentials_line(registry)]) + "\n"
    if new == old:
        return path, False
    Path(target).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(target, new.encode(), 0o600)
    return path, True
