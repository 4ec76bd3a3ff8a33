"""The deploy-time parameters (DeployParameter), read all at once: one GetParameters call
answers every one of them, and the answer is kept for the boot in PARAMETERS_CACHE_PATH (on
/run), where the first-boot script left it, so a node's boot makes one Parameter Store call, not
one per value and step. A value asked for that the answer lacks (not there yet at deploy time),
or an answer older than the caller accepts, is read again, all at once."""

from __future__ import annotations

import contextlib

from ..contract import (
    PARAMETERS_CACHE_PATH,
    PARAMETERS_FRESH_SECONDS,
    DeployParameter,
    DeployValues,
    deploy_values_of,
    read_deploy_values,
)
from .context import Context, write_atomic


def read_all(ctx: Context) -> DeployValues:
    """Every deploy-time parameter of the cluster that exists, in one call; kept for the boot."""
    prefix = ctx.bootstrap_env().parameter_prefix
    names = [ctx.parameter_name(key) for key in DeployParameter]
    answer = ctx.aws.ssm().get_parameters(Names=names)
    values = DeployValues(float(ctx.clock()), deploy_values_of(dict(answer), prefix))
    # A power program (SlurmUser) may not write /run/slurmstack: then it is kept in memory.
    with contextlib.suppress(OSError):
        write_atomic(ctx.path(PARAMETERS_CACHE_PATH), values.text().encode(), 0o644)
    return values


def cached(ctx: Context) -> DeployValues | None:
    try:
        return read_deploy_values(ctx.path(PARAMETERS_CACHE_PATH).read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return None


def get(
    ctx: Context, key: DeployParameter, max_age: float = PARAMETERS_FRESH_SECONDS
) -> str | None:
    """The value of ``key``, from the boot's answer when it has it and is at most ``max_age``
    seconds old, else from a new one; None while the parameter does not exist."""
    known = cached(ctx)
    fresh = known is not None and float(ctx.clock()) - known.read_at <= max_age
    if known is not None and fresh and key.value in known.values:
        return known.values[key.value]
    return read_all(ctx).values.get(key.value)
