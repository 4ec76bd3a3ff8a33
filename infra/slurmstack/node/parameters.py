"""The deploy-time parameters (DeployParameter), read all at once: one GetParameters call
answers every one a pool node reads (the head's take two), and the answer is kept for the boot
in PARAMETERS_CACHE_PATH (on /run), where the first-boot script left it, so a pool node's boot
makes one Parameter Store call, not one per value and step. A value asked for that the answer
lacks (not there yet at deploy time, or beyond the node's role), or an answer older than the
caller accepts, is read again, all at once. Once the boot is done (BOOTSTRAP_DONE), every value is
read afresh: what runs later (a pushed configuration, slurmd's restart after the head was
replaced) runs because a value changed."""

from __future__ import annotations

import contextlib

from ..contract import (
    BOOTSTRAP_DONE,
    PARAMETERS_CACHE_PATH,
    PARAMETERS_FRESH_SECONDS,
    DeployParameter,
    DeployValues,
    deploy_values_of,
    parameter_calls,
    parameter_name,
    read_deploy_values,
)
from .context import Context, write_atomic


def read_all(ctx: Context, also: str = "") -> DeployValues:
    """The deploy-time parameters of the node's role (and ``also``) that exist, in one call
    (the head's in two); kept for the boot."""
    env = ctx.bootstrap_env()
    ssm = ctx.aws.ssm()
    found = [
        item
        for names in parameter_calls(env.parameter_prefix, env.role, also)
        for item in ssm.get_parameters(Names=names).get("Parameters", [])
    ]
    answer: dict[str, object] = {"Parameters": found}
    values = DeployValues(float(ctx.clock()), deploy_values_of(answer, env.parameter_prefix))
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
    ctx: Context, key: DeployParameter | str, max_age: float = PARAMETERS_FRESH_SECONDS
) -> str | None:
    """The value of ``key``, from the boot's answer when it has it and is at most ``max_age``
    seconds old and the node is still booting, else from a new one; None while the parameter
    does not exist."""
    booting = not ctx.path(BOOTSTRAP_DONE).exists()
    known = cached(ctx) if booting else None
    fresh = known is not None and float(ctx.clock()) - known.read_at <= max_age
    if not isinstance(key, DeployParameter):
        return single(ctx, key)
    if known is not None and fresh and key.value in known.values:
        return known.values[key.value]
    return read_all(ctx, key.value).values.get(key.value)


def single(ctx: Context, key: str) -> str | None:
    """A value outside the role's set (a file system of yours' names, contract.existing_parameter:
    read once, at its mount), in a call of its own."""
    ssm = ctx.aws.ssm()
    try:
        name = parameter_name(ctx.bootstrap_env().parameter_prefix, key)
        return str(ssm.get_parameter(Name=name)["Parameter"]["Value"])
    except ssm.exceptions.ParameterNotFound:
        return None
