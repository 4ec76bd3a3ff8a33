"""identities: the people of identities.json on this node (observe, decide, act), before
slurmd or slurmctld starts at boot and again on every configuration push."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ...contract import (
    IDENTITIES_PATH,
    IDENTITY_STATE_PATH,
    SSHD_UNIT,
    Identities,
    load_document,
)
from .. import system
from ..context import AgentError, Context, log, write_atomic
from . import access, directory
from .accounts import Decision, Observed, decide, parse_group, parse_passwd

SSSD_UNIT = "sssd.service"


@dataclass(frozen=True)
class Outcome:
    commands: int
    homes_made: tuple[str, ...]
    locked: tuple[str, ...]
    problems: tuple[str, ...]


def observe(ctx: Context) -> Observed:
    state_path = ctx.path(IDENTITY_STATE_PATH)
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    return Observed(
        users=parse_passwd(system.read(ctx, "/etc/passwd") or ""),
        groups=parse_group(system.read(ctx, "/etc/group") or ""),
        managed_users={str(k): int(v) for k, v in state.get("users", {}).items()},
        locked=frozenset(state.get("locked", [])),
    )


def act(ctx: Context, decision: Decision) -> None:
    for command in decision.commands:
        ctx.ok(*command)
    state = {"users": decision.managed_users, "locked": sorted(decision.locked)}
    text = json.dumps(state, indent=2, sort_keys=True) + "\n"
    write_atomic(ctx.path(IDENTITY_STATE_PATH), text.encode(), 0o600)


def identities(ctx: Context) -> Outcome:
    path = ctx.path(IDENTITIES_PATH)
    if not path.exists():
        raise AgentError(f"{IDENTITIES_PATH} is missing: run `slurmstack-node sync-config` first")
    wanted = load_document(Identities, path.read_text())
    if wanted.directory is not None and directory.configure(ctx, wanted.directory):
        ctx.sh("systemctl", "enable", SSSD_UNIT, check=False)
        ctx.ok("systemctl", "restart", SSSD_UNIT)
    decision = decide(wanted, observe(ctx))
    act(ctx, decision)
    if decision.commands and wanted.directory is not None:
        ctx.sh("sss_cache", "-E", check=False)  # SSSD's cache must not hide a local change
    made = access.homes(ctx, wanted, decision.active)
    access.admins_sudoers(ctx, wanted, decision.active)
    if wanted.login:
        access.ssm_user_without_sudo(ctx)
        access.authorized_keys(ctx, decision.active)
        access.end_sessions(ctx, decision.to_lock)
        if wanted.host_key_secret and access.host_key(ctx, wanted.host_key_secret):
            ctx.sh("systemctl", "reload-or-restart", SSHD_UNIT, check=False)
    for problem in decision.problems:
        log(f"identities: {problem}")
    for name in decision.to_lock:
        log(f"identities: {name} is locked (files and id kept)")
    return Outcome(len(decision.commands), tuple(made), decision.to_lock, decision.problems)
