"""The accounts of a node: what /etc/passwd and /etc/group hold (observe), and the useradd,
usermod and groupadd commands that bring them to identities.json (decide, a pure function
tested as a table). The agent never deletes an account and never renumbers one: a person who
leaves the definition is locked, keeping their id and files; an id a node already gives
someone else is a finding, not a change."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...contract import NOLOGIN_SHELL, Identities, Person

# The GECOS field of the accounts the agent makes: operators see whose they are.
GECOS = "slurmstack"


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    home: str
    shell: str


@dataclass(frozen=True)
class Observed:
    """What the node has: /etc/passwd, /etc/group (gid and members) and the agent's state."""

    users: dict[str, Account]
    groups: dict[str, tuple[int, tuple[str, ...]]]
    managed_users: dict[str, int] = field(default_factory=dict)  # name -> uid the agent made
    locked: frozenset[str] = frozenset()  # managed users the agent has locked


@dataclass(frozen=True)
class Decision:
    commands: tuple[tuple[str, ...], ...]  # in order: groups, users, locks, unlocks
    problems: tuple[str, ...]  # what the node cannot do as asked (the rest is done)
    active: tuple[Person, ...]  # people who may log in: homes, keys, sudo
    to_lock: tuple[str, ...]  # accounts locked by these commands (their sessions end)
    managed_users: dict[str, int]  # the state after the commands
    locked: frozenset[str]


def parse_passwd(text: str) -> dict[str, Account]:
    out = {}
    for line in text.splitlines():
        fields = line.split(":")
        if len(fields) >= 7 and fields[2].isdigit() and fields[3].isdigit():
            out[fields[0]] = Account(
                fields[0], int(fields[2]), int(fields[3]), fields[5], fields[6]
            )
    return out


def parse_group(text: str) -> dict[str, tuple[int, tuple[str, ...]]]:
    out = {}
    for line in text.splitlines():
        fields = line.split(":")
        if len(fields) >= 4 and fields[2].isdigit():
            members = tuple(m for m in fields[3].split(",") if m)
            out[fields[0]] = (int(fields[2]), members)
    return out


def _groups(wanted: Identities, seen: Observed) -> tuple[list[tuple[str, ...]], list[str]]:
    commands: list[tuple[str, ...]] = []
    problems: list[str] = []
    by_gid = {gid: name for name, (gid, _) in seen.groups.items()}
    for group in wanted.groups:
        if group.name in seen.groups:
            gid = seen.groups[group.name][0]
            if gid != group.gid:
                problems.append(
                    f"group {group.name} has gid {gid} on this node, the definition says "
                    f"{group.gid}: left as it is (files keep their gid; fix the definition or "
                    "the node)"
                )
        elif group.gid in by_gid:
            problems.append(
                f"gid {group.gid} of group {group.name} is {by_gid[group.gid]}'s on this node: "
                f"group {group.name} not made"
            )
        else:
            commands.append(("groupadd", "-g", str(group.gid), group.name))
    return commands, problems


def _user_commands(person: Person, home: str, seen: Observed) -> list[tuple[str, ...]]:
    """useradd for a new person, usermod for one whose groups or shell changed."""
    extra = ",".join(person.groups)
    current = seen.users.get(person.name)
    if current is None:
        command = ["useradd", "-u", str(person.uid), "-g", str(person.gid)]
        if extra:
            command += ["-G", extra]
        return [(*command, "-d", home, "-M", "-s", person.shell, "-c", GECOS, person.name)]
    members = sorted(name for name, (_, m) in seen.groups.items() if person.name in m)
    changes: list[str] = []
    if current.gid != person.gid:
        changes += ["-g", str(person.gid)]
    if members != sorted(person.groups):
        changes += ["-G", extra]
    if current.shell != person.shell and person.name not in seen.locked:
        changes += ["-s", person.shell]
    return [("usermod", *changes, person.name)] if changes else []


def decide(wanted: Identities, seen: Observed) -> Decision:
    commands, problems = _groups(wanted, seen)
    managed = dict(seen.managed_users)
    locked = set(seen.locked)
    by_uid = {a.uid: a.name for a in seen.users.values()}
    active: list[Person] = []
    to_lock: list[str] = []
    declared = {p.name for p in wanted.people}
    for person in wanted.people:
        home = f"{wanted.home.rstrip('/')}/{person.name}"
        current = seen.users.get(person.name)
        if current is not None and person.name not in managed:
            problems.append(
                f"user {person.name} exists on this node and was not made by slurmstack (the "
                "image's?): left as it is"
            )
            continue
        if current is not None and current.uid != person.uid:
            problems.append(
                f"user {person.name} has uid {current.uid} on this node, the definition says "
                f"{person.uid}: ids are never changed (their files keep the old one)"
            )
            continue
        if current is None and person.uid in by_uid:
            problems.append(
                f"uid {person.uid} of {person.name} is {by_uid[person.uid]}'s on this node: "
                f"{person.name} not made"
            )
            continue
        commands += _user_commands(person, home, seen)
        managed[person.name] = person.uid
        if person.locked:
            if person.name not in locked:
                commands.append(_lock(person.name))
                to_lock.append(person.name)
                locked.add(person.name)
        else:
            if person.name in locked:
                commands.append(("usermod", "-e", "", "-s", person.shell, person.name))
                locked.discard(person.name)
            active.append(person)
    # Accounts the agent made whose person left the definition: locked, never deleted.
    for name in sorted(set(managed) - declared):
        if name in seen.users and name not in locked:
            commands.append(_lock(name))
            to_lock.append(name)
            locked.add(name)
    return Decision(
        commands=tuple(commands),
        problems=tuple(problems),
        active=tuple(active),
        to_lock=tuple(to_lock),
        managed_users=managed,
        locked=frozenset(locked),
    )


def _lock(name: str) -> tuple[str, ...]:
    """Expired since 1970 (pam_unix's account check refuses it, key logins and su included)
    and no shell. The password stays what it is: the agent's accounts have none ('!')."""
    return ("usermod", "-e", "1", "-s", NOLOGIN_SHELL, name)
