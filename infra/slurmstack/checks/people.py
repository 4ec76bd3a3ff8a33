"""People: users, groups, the directory and the login pools. Every node creates these
accounts, so a clash found here is a clash on every node, and on the shared /home."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error, suggestion, warning
from slurmstack.checks.ssh_keys import ssh_key_problem
from slurmstack.contract import IMAGE_IDS, PERSON_ID_MAX, PERSON_ID_MIN
from slurmstack.findings import Finding
from slurmstack.spec import ClusterSpec

# Names the image or the cluster's daemons own: a person by that name would take over
# (or be refused by useradd on) every node.
RESERVED_USER_NAMES = frozenset(
    {"root", "ubuntu", "ssm-user", "slurm", "munge", "mysql", "nobody", "daemon", "sshd"}
)


def _id_problem(value: int) -> str | None:
    """Why ``value`` cannot be a person's or group's id, or None."""
    if value in IMAGE_IDS:
        return f"{value} is {IMAGE_IDS[value]}'s id"
    if value < PERSON_ID_MIN:
        return (
            f"{value} is in the system's range (below {PERSON_ID_MIN}: the daemons' ids, munge "
            "and slurm among them, and the image's own accounts)"
        )
    if value > PERSON_ID_MAX:
        return f"{value} is above {PERSON_ID_MAX}, where Debian's fixed daemon ids and nobody are"
    return None


T = TypeVar("T")


def _first_seen(items: Sequence[tuple[int, T]]) -> Iterator[tuple[int, T, int]]:
    """(index, value, index of the first with that value) for every repeat."""
    first: dict[T, int] = {}
    for index, value in items:
        if value in first:
            yield index, value, first[value]
        else:
            first.setdefault(value, index)


# why: two users of one name, or of one uid, are one account on every node and one owner of
# two homes: whoever is created second takes over the first one's files.
@rule
def user_duplicate(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, name, first in _first_seen([(i, u.name) for i, u in enumerate(spec.users)]):
        yield error(
            f"users[{index}].name",
            f"user {name!r} is declared twice (users[{first}] too); remove one",
        )
    for index, uid, first in _first_seen([(i, u.uid) for i, u in enumerate(spec.users)]):
        yield error(
            f"users[{index}].uid",
            f"uid {uid} is users[{first}]'s ({spec.users[first].name}) too: every user needs "
            "an id of their own (the same on every node and on /home)",
        )


# why: one gid for two groups (or a personal group taking a declared group's gid) merges
# the groups on every node: file permissions of one open to the other.
@rule
def group_duplicate(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, name, first in _first_seen([(i, g.name) for i, g in enumerate(spec.groups)]):
        yield error(f"groups[{index}].name", f"group {name!r} is declared twice (groups[{first}])")
    for index, gid, first in _first_seen([(i, g.gid) for i, g in enumerate(spec.groups)]):
        yield error(
            f"groups[{index}].gid",
            f"gid {gid} is groups[{first}]'s ({spec.groups[first].name}) too: give each group "
            "its own id",
        )
    declared = {g.gid: g.name for g in spec.groups}
    names = {g.name for g in spec.groups}
    for index, user in enumerate(spec.users):
        if user.group is not None:
            continue
        # No group: a personal group named as the user, with the uid as its gid.
        if user.uid in declared and declared[user.uid] != user.name:
            yield error(
                f"users[{index}].group",
                f"{user.name}'s personal group would take gid {user.uid}, which group "
                f"{declared[user.uid]!r} has; give {user.name} group: <a declared group>, or "
                "change one of the ids",
            )
        elif user.name in names and declared.get(user.uid) != user.name:
            yield error(
                f"users[{index}].group",
                f"a group {user.name!r} is declared with another gid than {user.name}'s uid "
                f"({user.uid}); set group: {user.name} on the user to make it their primary group",
            )


# why: a person with a system or image id would own the files of a daemon (munge's key,
# slurm's state) or of the image's own account on every node.
@rule
def people_id_range(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, user in enumerate(spec.users):
        problem = _id_problem(user.uid)
        if problem:
            yield error(
                f"users[{index}].uid",
                f"{problem}; people take ids from {PERSON_ID_MIN} to {PERSON_ID_MAX}",
            )
    for index, group in enumerate(spec.groups):
        problem = _id_problem(group.gid)
        if problem:
            yield error(
                f"groups[{index}].gid",
                f"{problem}; groups take ids from {PERSON_ID_MIN} to {PERSON_ID_MAX}",
            )


# why: useradd refuses a name the image already has, or worse, a definition would hand a
# person the daemon's account.
@rule
def user_name_reserved(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, user in enumerate(spec.users):
        if user.name in RESERVED_USER_NAMES:
            yield error(
                f"users[{index}].name",
                f"{user.name!r} is an account of the image or of the cluster's daemons; "
                "choose the person's own login name",
            )


# why: useradd refuses a group that does not exist, and the node would stop at that user.
@rule
def user_group_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    names = [g.name for g in spec.groups]
    for index, user in enumerate(spec.users):
        references = [("group", user.group)] if user.group is not None else []
        references += [(f"groups[{i}]", name) for i, name in enumerate(user.groups)]
        for field, name in references:
            if name is not None and name not in names:
                known = f"; declared: {', '.join(names)}" if names else ""
                yield error(
                    f"users[{index}].{field}",
                    f"group {name!r} is not declared under groups"
                    f"{suggestion(name, names, catalog)}: add it with its gid{known}",
                )


# why: a mangled key logs nobody in, and the user finds out at their first ssh.
@rule
def user_ssh_key_form(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, user in enumerate(spec.users):
        for position, key in enumerate(user.ssh_keys):
            problem = ssh_key_problem(key)
            if problem:
                yield error(f"users[{index}].ssh_keys[{position}]", problem)


# why: Session Manager's Run As takes one Linux user per principal (its SSMSessionRunAs tag).
@rule
def user_iam_principal_duplicate(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    pairs = [(i, u.iam_principal) for i, u in enumerate(spec.users) if u.iam_principal]
    for index, principal, first in _first_seen(pairs):
        yield error(
            f"users[{index}].iam_principal",
            f"{principal} already runs as {spec.users[first].name} (users[{first}]): Session "
            "Manager's Run As maps a principal to one Linux user",
        )


# why: fair share, limits and usage are keyed on user names; a name no node knows has no
# uid, so its jobs cannot run, and its association is a typo nobody sees.
@rule
def account_user_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    if spec.directory is not None:
        return  # the directory's people are known to the nodes, not to the definition
    declared = [u.name for u in spec.users]
    reported: set[str] = set()  # one finding per name, where it is first named
    for index, account in enumerate(spec.slurm.accounting.accounts):
        for position, user in enumerate(account.users):
            if user in declared or user in reported:
                continue
            reported.add(user)
            path = f"slurm.accounting.accounts[{index}].users[{position}]"
            if declared:
                yield error(
                    path,
                    f"user {user!r} is not declared under users"
                    f"{suggestion(user, declared, catalog)}: declare them (name, uid, keys) or "
                    "turn on directory",
                )
            else:
                yield warning(
                    path,
                    f"user {user!r} exists on no node unless the image has them: declare the "
                    "cluster's people under users (or a directory), so every node knows them",
                )


# why: nodes verify the directory's certificate: without its CA, SSSD refuses every server
# (and without TLS a bind password would cross the network in the clear).
@rule
def directory_tls(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    directory = spec.directory
    if directory is None:
        return
    if not directory.ca_certificate:
        yield error(
            "directory.ca_certificate",
            "a directory needs ca_certificate: the PEM of the CA that signed its servers' "
            "certificates (nodes verify them; SSSD refuses a server it cannot verify)",
        )
    elif "-----BEGIN CERTIFICATE-----" not in directory.ca_certificate:
        yield error(
            "directory.ca_certificate",
            "expected PEM text starting with -----BEGIN CERTIFICATE----- (paste the CA file)",
        )


# why: a bind DN without its password (or a password for nobody) fails every lookup at boot.
@rule
def directory_bind(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    directory = spec.directory
    if directory is None:
        return
    if directory.bind_dn and not directory.bind_password_secret:
        yield error(
            "directory.bind_password_secret",
            "bind_dn needs bind_password_secret: the Secrets Manager secret holding its password",
        )
    if directory.bind_password_secret and not directory.bind_dn:
        yield error(
            "directory.bind_dn",
            "bind_password_secret is the password of bind_dn: give the DN nodes bind as",
        )


# why: two login pools of one name share every AWS resource name.
@rule
def login_pool_name_duplicate(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    pairs = [(i, p.name) for i, p in enumerate(spec.login_pools)]
    for index, name, first in _first_seen(pairs):
        yield error(
            f"login_pools[{index}].name",
            f"login pool {name!r} is declared twice (login_pools[{first}]); rename one",
        )


# why: a load balancer in front of port 22 with no CIDR allowed to reach it serves nobody.
@rule
def login_pool_load_balancer(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.login_pools):
        if pool.load_balancer and not pool.ssh_cidrs:
            yield error(
                f"login_pools[{index}].load_balancer",
                "a load balancer serves direct SSH from ssh_cidrs: name the CIDRs, or drop it "
                "(Session Manager needs none)",
            )


# why: declared people with no login pool would work on the head node, which runs slurmctld,
# slurmdbd and MariaDB: one build there takes scheduling down.
@rule
def people_without_login_pool(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    if (spec.users or spec.directory is not None) and not spec.login_pools:
        yield warning(
            "login_pools",
            "people are declared but no login pool is: they would work on the head node; add "
            "login_pools: [{name: login, instance_type: m7i.2xlarge}]",
        )
