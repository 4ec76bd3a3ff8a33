"""munge-key: /etc/munge/munge.key from Secrets Manager."""

from __future__ import annotations

from pathlib import Path

from ..context import AgentError, Context, write_atomic

MUNGE_KEY = "/etc/munge/munge.key"


def munge_key(ctx: Context) -> Path:
    secret = ctx.bootstrap_env().munge_secret
    value = ctx.aws.secretsmanager().get_secret_value(SecretId=secret)
    key = value.get("SecretBinary")
    if key is None:
        raise AgentError(f"secret {secret} holds no binary key")
    if len(key) < 32:
        raise AgentError(f"secret {secret} is {len(key)} bytes; munge needs at least 32")
    path = ctx.path(MUNGE_KEY)
    write_atomic(path, bytes(key), 0o400, owner=ctx.owner("munge"))
    return path
