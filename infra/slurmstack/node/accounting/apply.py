"""accounting-apply (head): the definition's accounts, users and QoS, applied with sacctmgr.

Observe (what slurmdbd holds for this cluster: sacctmgr_text), decide (a pure function:
association_plan.decide), act (each command once, logged; a failed one is reported and tried
again at the next apply). Running it twice changes nothing the second time.

Ownership: slurmstack removes only what it created. It records each QoS, account and
user-in-account it adds in a state file on the head's state volume (the contract's
ACCOUNTING_OWNED_PATH, beside the database, so a replacement head keeps it) and removes an
object only when that record names it and the definition no longer does. root, normal, and whatever an
operator made by hand are never removed; an object the definition names that existed before
is brought to the definition's settings but stays the operator's. An object in the record that
someone removed by hand leaves the record.
"""

from __future__ import annotations

import json
from typing import Any

from ...contract import ACCOUNTING_OWNED_PATH
from ..context import AgentError, Context, log, write_atomic
from .database import AccountingOff, accounting_config
from .decide import Decision, decide, member_key
from .sacctmgr import ASSOC_FIELDS, QOS_FIELDS, Observed, parse_associations, parse_pairs, parse_qos

SACCTMGR = "sacctmgr"
CONTROLLER_WAIT_SECONDS = 120.0
OWNED_KINDS = ("qos", "accounts", "members")


def sacctmgr(ctx: Context, *args: str) -> str:
    return ctx.ok(SACCTMGR, *args)


def observe(ctx: Context, cluster: str) -> Observed:
    observed = Observed()
    observed.qos = parse_qos(sacctmgr(ctx, "-n", "-P", "show", "qos", f"format={QOS_FIELDS}"))
    where = ("where", f"cluster={cluster}", f"format={ASSOC_FIELDS}")
    parse_associations(sacctmgr(ctx, "-n", "-P", "show", "assoc", *where), observed)
    users = sacctmgr(ctx, "-n", "-P", "show", "user", "format=user,defaultaccount")
    observed.default_accounts = parse_pairs(users)
    accounts = sacctmgr(ctx, "-n", "-P", "show", "account", "format=account,description")
    observed.descriptions = parse_pairs(accounts)
    return observed


def owned(ctx: Context, observed: Observed) -> dict[str, list[str]]:
    """slurmstack's record of what it created, less what is gone from slurmdbd."""
    state = ctx.path(ACCOUNTING_OWNED_PATH)
    data: dict[str, list[str]] = json.loads(state.read_text()) if state.exists() else {}
    present = {
        "qos": set(observed.qos),
        "accounts": set(observed.accounts),
        "members": {member_key(u, a) for u, a in observed.members},
    }
    return {kind: [k for k in data.get(kind, []) if k in present[kind]] for kind in OWNED_KINDS}


def save_owned(ctx: Context, record: dict[str, list[str]]) -> None:
    data = {kind: sorted(set(record.get(kind, []))) for kind in OWNED_KINDS}
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    write_atomic(ctx.path(ACCOUNTING_OWNED_PATH), text.encode(), 0o600)


def ensure_cluster(ctx: Context, cluster: str) -> None:
    """slurmctld registers its cluster at its first start; adding it here too lets this run
    first (sacctmgr refuses associations on an unknown cluster)."""

    def known() -> bool:
        return cluster in sacctmgr(ctx, "-n", "-P", "show", "cluster", "format=cluster").split()

    if not known():
        added = ctx.sh(SACCTMGR, "-i", "add", "cluster", cluster, check=False)
        # slurmctld may have registered it in between: that is as good.
        if added.returncode != 0 and not known():
            raise AgentError(f"cannot add cluster {cluster}: {added.stderr.strip()}")


def controller_answers(ctx: Context) -> bool:
    result = ctx.sh("scontrol", "ping", check=False)
    return result.returncode == 0 and " is UP" in result.stdout


def wait_for_controller(
    ctx: Context, timeout: float = CONTROLLER_WAIT_SECONDS, poll: float = 2.0
) -> bool:
    """Whether slurmctld answers, waiting for it up to ``timeout``. slurmdbd pushes each change
    to the controller that registered the cluster and forgets that registration when the push
    is refused: a change made while slurmctld is still starting (registered, not yet listening)
    would leave it deaf to this and every later change until its next restart (sbatch:
    "Invalid account"). A controller that is down reads the database whole when it starts."""
    waited = 0.0
    while not controller_answers(ctx):
        if waited >= timeout:
            log(f"accounting-apply: slurmctld does not answer after {int(timeout)} s: applying")
            return False
        ctx.sleep(poll)
        waited += poll
    return True


def accounting_apply(ctx: Context, dry_run: bool = False) -> dict[str, Any]:
    """Apply accounting.json's QoS, accounts and users; returns what was done, what was kept
    and why, and what failed (with sacctmgr's last line)."""
    try:
        desired = accounting_config(ctx)
    except AccountingOff as off:
        log(f"accounting-apply: accounting is off ({off}): nothing to do")
        return {"enabled": False}
    if not dry_run:
        wait_for_controller(ctx)
        ensure_cluster(ctx, desired.cluster)
    observed = observe(ctx, desired.cluster)
    record = owned(ctx, observed)
    decision = decide(desired, observed, record)
    if dry_run:
        return _result([a.what for a in decision.actions], decision, {})
    done: list[str] = []
    failed: dict[str, str] = {}
    for action in decision.actions:
        result = ctx.sh(SACCTMGR, "-i", *action.args, check=False)
        if result.returncode != 0:
            said = f"{result.stdout}\n{result.stderr}".split("\n")
            said = [line.strip() for line in said if line.strip()]
            failed[action.what] = "; ".join(said) or f"exit {result.returncode}"
            log(f"accounting-apply: {action.what} failed: {failed[action.what]}")
            continue
        log(f"accounting-apply: {action.what}")
        done.append(action.what)
        if action.own is not None:
            record[action.own[0]].append(action.own[1])
        for kind, key in action.disown:
            record[kind] = [k for k in record[kind] if k != key]
        save_owned(ctx, record)  # after each command: a crash loses nothing
    save_owned(ctx, record)
    return _result(done, decision, failed)


def _result(done: list[str], decision: Decision, failed: dict[str, str]) -> dict[str, Any]:
    for what, why in decision.kept.items():
        log(f"accounting-apply: kept {what}: {why}")
    return {"enabled": True, "done": done, "kept": decision.kept, "failed": failed}
