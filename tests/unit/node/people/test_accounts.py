"""The people room's decide: identities.json against what a node's passwd and group hold."""

from __future__ import annotations

from dataclasses import replace

import pytest

from slurmstack.contract import NOLOGIN_SHELL, Identities, Person, PosixGroup
from slurmstack.node.people.accounts import (
    Account,
    Observed,
    decide,
    parse_group,
    parse_passwd,
)

ALICE = Person("alice", 2001, "research", 3000, groups=("gpu",), admin=True)
BOB = Person("bob", 2002, "bob", 2002)
GROUPS = (PosixGroup("research", 3000), PosixGroup("gpu", 3001), PosixGroup("bob", 2002))
WANTED = Identities(home="/home", people=(ALICE, BOB), groups=GROUPS)
IMAGE_PASSWD = (
    "root:x:0:0:root:/root:/bin/bash\n"
    "ubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash\n"
    "slurm:x:64030:64030::/nonexistent:/usr/sbin/nologin\n"
)
IMAGE_GROUP = "root:x:0:\nubuntu:x:1000:\nsudo:x:27:ubuntu\n"


def fresh() -> Observed:
    return Observed(users=parse_passwd(IMAGE_PASSWD), groups=parse_group(IMAGE_GROUP))


def made() -> Observed:
    """The node after the first sync: alice and bob made by the agent."""
    users = parse_passwd(
        IMAGE_PASSWD
        + "alice:x:2001:3000:slurmstack:/home/alice:/bin/bash\n"
        + "bob:x:2002:2002:slurmstack:/home/bob:/bin/bash\n"
    )
    groups = parse_group(IMAGE_GROUP + "research:x:3000:\ngpu:x:3001:alice\nbob:x:2002:\n")
    return Observed(users=users, groups=groups, managed_users={"alice": 2001, "bob": 2002})


def test_a_fresh_node_gets_groups_then_users_with_the_definitions_ids() -> None:
    decision = decide(WANTED, fresh())
    assert decision.commands == (
        ("groupadd", "-g", "3000", "research"),
        ("groupadd", "-g", "3001", "gpu"),
        ("groupadd", "-g", "2002", "bob"),
        ("useradd", "-u", "2001", "-g", "3000", "-G", "gpu", "-d", "/home/alice", "-M",
         "-s", "/bin/bash", "-c", "slurmstack", "alice"),
        ("useradd", "-u", "2002", "-g", "2002", "-d", "/home/bob", "-M", "-s", "/bin/bash",
         "-c", "slurmstack", "bob"),
    )  # fmt: skip
    assert decision.problems == ()
    assert [p.name for p in decision.active] == ["alice", "bob"]
    assert decision.managed_users == {"alice": 2001, "bob": 2002}


def test_a_node_already_in_step_runs_nothing() -> None:
    decision = decide(WANTED, made())
    assert decision.commands == ()
    assert decision.to_lock == ()


def test_a_removed_person_is_locked_not_deleted_and_stays_managed() -> None:
    decision = decide(replace(WANTED, people=(ALICE,)), made())
    assert decision.commands == (("usermod", "-e", "1", "-s", NOLOGIN_SHELL, "bob"),)
    assert decision.to_lock == ("bob",)
    assert "bob" in decision.managed_users and "bob" in decision.locked
    assert not any(c[0] in ("userdel", "groupdel") for c in decision.commands)
    # The next sync does not lock again.
    again = decide(
        replace(WANTED, people=(ALICE,)),
        replace(made(), locked=decision.locked, managed_users=decision.managed_users),
    )
    assert again.commands == ()


def test_a_person_who_comes_back_is_unlocked_with_their_shell() -> None:
    seen = replace(made(), locked=frozenset({"bob"}))
    decision = decide(WANTED, seen)
    assert decision.commands == (("usermod", "-e", "", "-s", "/bin/bash", "bob"),)
    assert "bob" not in decision.locked
    assert [p.name for p in decision.active] == ["alice", "bob"]


def test_locked_in_the_definition_locks_and_keeps_them_out_of_the_active() -> None:
    decision = decide(replace(WANTED, people=(ALICE, replace(BOB, locked=True))), made())
    assert decision.commands == (("usermod", "-e", "1", "-s", NOLOGIN_SHELL, "bob"),)
    assert [p.name for p in decision.active] == ["alice"]


def test_changed_groups_are_one_usermod() -> None:
    alice = replace(ALICE, groups=())
    decision = decide(replace(WANTED, people=(alice, BOB)), made())
    assert decision.commands == (("usermod", "-G", "", "alice"),)


@pytest.mark.parametrize(
    ("passwd", "fragment"),
    [
        # The image has an alice of its own: never taken over.
        ("alice:x:1500:1500::/home/alice:/bin/bash\n", "was not made by slurmstack"),
        # Another account holds bob's uid: bob is not made.
        ("carol:x:2002:2002::/home/carol:/bin/bash\n", "uid 2002 of bob is carol's"),
    ],
)
def test_ids_are_never_taken_from_someone_else(passwd: str, fragment: str) -> None:
    seen = fresh()
    seen = replace(seen, users={**seen.users, **parse_passwd(passwd)})
    decision = decide(WANTED, seen)
    assert any(fragment in p for p in decision.problems), decision.problems
    assert not any("useradd" in c and c[-1] in ("alice", "bob") and fragment.endswith(c[-1])
                   for c in decision.commands)  # fmt: skip


def test_a_renumbered_person_is_a_problem_not_a_usermod() -> None:
    seen = made()
    seen = replace(
        seen, users={**seen.users, "bob": Account("bob", 2500, 2002, "/home/bob", "/bin/bash")}
    )
    decision = decide(WANTED, seen)
    assert any("ids are never changed" in p for p in decision.problems)
    assert not any("-u" in c for c in decision.commands)


def test_a_group_whose_gid_another_group_has_is_not_made() -> None:
    seen = fresh()
    seen = replace(seen, groups={**seen.groups, "docker": (3001, ())})
    decision = decide(WANTED, seen)
    assert ("groupadd", "-g", "3001", "gpu") not in decision.commands
    assert any("gid 3001 of group gpu is docker's" in p for p in decision.problems)
