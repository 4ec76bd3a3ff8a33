"""decide(): from what slurmdbd holds, what the definition wants and what slurmstack created
before, the sacctmgr commands for accounting-apply, in an order sacctmgr accepts: QoS first
(accounts name them), accounts parents first, users, default accounts; then removals: users,
accounts children first, QoS last. Pure: tested as a table, run by slurmstack.node.associations.

Only objects slurmstack created (``owned``) are ever removed, and an account of slurmstack's
that holds a sub-account or user it did not create is kept (sacctmgr would remove them with it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...contract import ROOT_ACCOUNT, AccountingAccount, AccountingConfig, AccountingQos
from .sacctmgr import Observed

# What slurmstack writes into the accounts it creates (sacctmgr shows it as Org), so an
# operator sees which accounts the definition manages.
ORGANIZATION = "slurmstack"
# The QoS settings the definition states, and sacctmgr's names for them.
QOS_SCALARS = (
    ("priority", "Priority"),
    ("max_wall_minutes", "MaxWall"),
    ("max_jobs_per_user", "MaxJobsPerUser"),
)
QOS_TRES = (
    ("max_tres_per_user", "MaxTRESPerUser"),
    ("max_tres_per_job", "MaxTRESPerJob"),
    ("grp_tres", "GrpTRES"),
)


@dataclass(frozen=True)
class Action:
    """One sacctmgr command, what it does, and what it does to slurmstack's ownership record."""

    what: str  # e.g. "add qos high"
    args: tuple[str, ...]  # after `sacctmgr -i`
    own: tuple[str, str] | None = None  # (kind, key) slurmstack owns once it ran
    disown: tuple[tuple[str, str], ...] = ()  # (kind, key) gone with it


@dataclass
class Decision:
    actions: list[Action] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)  # object -> why it is not removed


def member_key(user: str, account: str) -> str:
    return f"{user}@{account}"


def modify(kind: str, where: dict[str, str], settings: list[str]) -> tuple[str, ...]:
    conditions = [f"{key}={value}" for key, value in where.items()]
    return ("modify", kind, "where", *conditions, "set", *settings)


def remove(kind: str, where: dict[str, str]) -> tuple[str, ...]:
    return ("remove", kind, "where", *(f"{key}={value}" for key, value in where.items()))


def tres_setting(want: dict[str, int], have: dict[str, int]) -> str:
    """The TRES list that turns ``have`` into ``want`` (-1 clears a limit)."""
    items = {**{name: -1 for name in have if name not in want}, **want}
    return ",".join(f"{name}={value}" for name, value in sorted(items.items()))


def qos_settings(want: AccountingQos, have: dict[str, Any] | None) -> list[str]:
    settings = []
    if have is None or want.description.lower() != have["description"].lower():
        settings.append(f"Description={want.description}")
    for key, name in QOS_SCALARS:
        value = getattr(want, key)
        if (have is None and value is not None) or (have is not None and value != have[key]):
            settings.append(f"{name}={-1 if value is None else value}")
    for key, name in QOS_TRES:
        before = {} if have is None else have[key]
        if getattr(want, key) != before:
            settings.append(f"{name}={tres_setting(getattr(want, key), before)}")
    return settings


def account_settings(want: AccountingAccount, have: dict[str, Any] | None) -> list[str]:
    """Association settings. qos and default_qos are the effective ones (accounting.json
    resolves inheritance), as sacctmgr shows them."""
    settings = []
    if have is None or want.parent != have["parent"]:
        settings.append(f"Parent={want.parent}")
    if have is None or want.fairshare != have["fairshare"]:
        settings.append(f"Fairshare={want.fairshare}")
    if have is None or sorted(want.qos) != have["qos"]:
        settings.append(f"QOS={','.join(sorted(want.qos))}")
    default = want.default_qos
    if default is not None and (have is None or default != have["default_qos"]):
        settings.append(f"DefaultQOS={default}")
    before = {} if have is None else have["grp_tres"]
    if want.grp_tres != before:
        settings.append(f"GrpTRES={tres_setting(want.grp_tres, before)}")
    return settings


def _qos_actions(desired: AccountingConfig, observed: Observed) -> list[Action]:
    actions = []
    for want in desired.qos:
        name, have = want.name, observed.qos.get(want.name)
        settings = qos_settings(want, have)
        if have is None:
            actions.append(
                Action(f"add qos {name}", ("add", "qos", name, *settings), ("qos", name))
            )
        elif settings:
            actions.append(Action(f"modify qos {name}", modify("qos", {"name": name}, settings)))
    return actions


def _account_actions(desired: AccountingConfig, observed: Observed) -> list[Action]:
    cluster = desired.cluster
    actions = []
    for want in desired.accounts:
        name, have = want.name, observed.accounts.get(want.name)
        settings = account_settings(want, have)
        if have is None:
            head = [f"Cluster={cluster}", f"Description={want.description}"]
            head.append(f"Organization={ORGANIZATION}")
            args = ("add", "account", name, *head, *settings)
            actions.append(Action(f"add account {name}", args, ("accounts", name)))
            continue
        where = {"name": name, "cluster": cluster}
        if settings:
            actions.append(Action(f"modify account {name}", modify("account", where, settings)))
        if want.description.lower() != observed.descriptions.get(name, "").lower():
            described = [f"Description={want.description}"]
            actions.append(
                Action(f"describe account {name}", modify("account", {"name": name}, described))
            )
    return actions


def _user_actions(desired: AccountingConfig, observed: Observed) -> list[Action]:
    cluster = desired.cluster
    actions = []
    known = observed.users()
    for user in desired.users:
        name, default = user.name, user.default_account
        existed = name in known
        for account in user.accounts:  # the default account comes first
            if (name, account) in observed.members:
                continue
            args = ["add", "user", name, f"Account={account}", f"Cluster={cluster}"]
            if name not in known:
                args.append(f"DefaultAccount={default}")
                known.add(name)
            own = ("members", member_key(name, account))
            actions.append(Action(f"add user {name} to {account}", tuple(args), own))
        if existed and observed.default_accounts.get(name) != default:
            setting = [f"DefaultAccount={default}"]
            what = f"default account of {name}: {default}"
            actions.append(Action(what, modify("user", {"name": name}, setting)))
    return actions


def _removal_actions(
    desired: AccountingConfig,
    observed: Observed,
    owned: dict[str, list[str]],
    kept: dict[str, str],
) -> list[Action]:
    cluster = desired.cluster
    owned_members = set(owned.get("members", []))
    wanted_accounts = {a.name for a in desired.accounts}
    wanted_members = {(u.name, a) for u in desired.users for a in u.accounts}
    defaults = {u.name: u.default_account for u in desired.users}
    going = [a for a in owned.get("accounts", []) if a not in wanted_accounts]
    accounts = removable_accounts(going, observed, owned_members, kept)
    actions = []
    # Users leave before their accounts go: sacctmgr refuses to remove an account that is a
    # user's default. A user's default moves to an association that stays (the user actions
    # above already moved a listed user's to the definition's); a user whose every
    # association goes loses the default one last, which deletes the user.
    leaving = {
        (u, a)
        for u, a in observed.members
        if member_key(u, a) in owned_members and (u, a) not in wanted_members
    }
    staying = (observed.members | wanted_members) - leaving
    for user, account in sorted(leaving, key=lambda m: (m[0], _is_default(m, observed), m[1])):
        default = defaults.get(user, observed.default_accounts.get(user))
        others = sorted(a for u, a in staying if u == user)
        if default == account and others:
            setting = [f"DefaultAccount={others[0]}"]
            what = f"default account of {user}: {others[0]}"
            actions.append(Action(what, modify("user", {"name": user}, setting)))
        where = {"name": user, "account": account, "cluster": cluster}
        disown = (("members", member_key(user, account)),)
        actions.append(
            Action(f"remove user {user} from {account}", remove("user", where), None, disown)
        )
    for account in accounts:
        gone = tuple(("members", member_key(u, a)) for u, a in observed.members if a == account)
        where = {"name": account, "cluster": cluster}
        disowned = (("accounts", account), *gone)
        actions.append(
            Action(f"remove account {account}", remove("account", where), None, disowned)
        )
    wanted_qos = {q.name for q in desired.qos}
    for name in sorted(set(owned.get("qos", [])) - wanted_qos):
        if name in observed.qos:
            actions.append(
                Action(f"remove qos {name}", remove("qos", {"name": name}), None, (("qos", name),))
            )
    return actions


def _is_default(member: tuple[str, str], observed: Observed) -> bool:
    return observed.default_accounts.get(member[0]) == member[1]


def removable_accounts(
    leaving: list[str], observed: Observed, owned_members: set[str], kept: dict[str, str]
) -> list[str]:
    """The accounts of ``leaving`` that can go, children before parents. sacctmgr removes an
    account with everything under it, so one holding a sub-account that stays, or a user
    slurmstack did not create, stays too (and ``kept`` says why)."""
    candidates = {a for a in leaving if a in observed.accounts}
    changed = True
    while changed:
        changed = False
        for account in sorted(candidates):
            children = [a for a, v in observed.accounts.items() if v["parent"] == account]
            staying = [f"account {c}" for c in children if c not in candidates]
            staying += [
                f"user {u}"
                for u, a in sorted(observed.members)
                if a == account and member_key(u, a) not in owned_members
            ]
            if staying:
                kept[f"account {account}"] = (
                    f"holds {', '.join(staying)}, which slurmstack did not create or keeps"
                )
                candidates.discard(account)
                changed = True
    return sorted(candidates, key=lambda a: (-_depth(a, observed), a))


def _depth(account: str, observed: Observed) -> int:
    depth, seen, current = 0, set(), account
    while current in observed.accounts and current not in seen and current != ROOT_ACCOUNT:
        seen.add(current)
        current = observed.accounts[current]["parent"]
        depth += 1
    return depth


def decide(desired: AccountingConfig, observed: Observed, owned: dict[str, list[str]]) -> Decision:
    """The commands that bring slurmdbd to ``desired`` (accounting.json)."""
    out = Decision()
    out.actions += _qos_actions(desired, observed)
    out.actions += _account_actions(desired, observed)
    out.actions += _user_actions(desired, observed)
    out.actions += _removal_actions(desired, observed, owned, out.kept)
    return out
