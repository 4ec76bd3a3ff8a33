"""What the plan decides about people: the accounts and groups every node creates (the
contract's Identities, identities.json), the directory SSSD reads, and the login pools."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.catalog import Catalog, InstanceFacts
from slurmstack.contract import (
    Directory,
    Identities,
    Person,
    PosixGroup,
    login_host_key_secret_name,
    login_role,
)
from slurmstack.plan.errors import PlanError
from slurmstack.rules.facts import resolve_facts
from slurmstack.spec import ClusterSpec, LoginPoolSpec, RootVolume

HOME_WITHOUT_SHARED_STORAGE = "/home"


@dataclass(frozen=True)
class LoginPoolPlan:
    name: str
    instance_type: str
    facts: InstanceFacts
    count: int
    ssh_cidrs: tuple[str, ...]
    load_balancer: bool
    ami: str | None
    root_volume: RootVolume

    @property
    def role(self) -> str:
        """The pool's role in bootstrap.env, the manifest and the render layout."""
        return login_role(self.name)


def plan_login_pool(pool: LoginPoolSpec, catalog: Catalog) -> LoginPoolPlan:
    facts = resolve_facts(pool.instance_type, pool.instance_facts, catalog)
    if facts is None:
        raise PlanError(f"no facts for instance type {pool.instance_type!r}")
    return LoginPoolPlan(
        name=pool.name,
        instance_type=pool.instance_type,
        facts=facts,
        count=pool.count,
        ssh_cidrs=tuple(str(c) for c in pool.ssh_cidrs),
        load_balancer=pool.load_balancer,
        ami=pool.ami,
        root_volume=pool.root_volume,
    )


def people(spec: ClusterSpec) -> tuple[Person, ...]:
    """The definition's users as nodes create them: a user without a group gets a personal
    group of their name with their uid as its gid (useradd's user groups)."""
    gids = {g.name: g.gid for g in spec.groups}
    out = []
    for user in spec.users:
        group = user.group or user.name
        out.append(
            Person(
                name=user.name,
                uid=user.uid,
                group=group,
                gid=gids[group] if user.group else gids.get(user.name, user.uid),
                groups=tuple(user.groups),
                ssh_keys=tuple(k.strip() for k in user.ssh_keys),
                admin=user.admin,
                locked=user.locked,
                shell=user.shell,
            )
        )
    return tuple(out)


def posix_groups(spec: ClusterSpec) -> tuple[PosixGroup, ...]:
    """The declared groups, then each personal group not declared already."""
    groups = {g.name: PosixGroup(g.name, g.gid) for g in spec.groups}
    for user in spec.users:
        if user.group is None and user.name not in groups:
            groups[user.name] = PosixGroup(user.name, user.uid)
    return tuple(groups.values())


def directory(spec: ClusterSpec) -> Directory | None:
    d = spec.directory
    if d is None:
        return None
    return Directory(
        kind=d.type.value,
        uris=tuple(d.uris),
        search_base=d.search_base,
        bind_dn=d.bind_dn or "",
        bind_password_secret=d.bind_password_secret or "",
        ca_certificate=d.ca_certificate or "",
        admin_group=d.admin_group or "",
        access_group=d.access_group or "",
        attributes=d.attributes.model_dump(),
    )


def identities(spec: ClusterSpec, login_pool: str | None = None) -> Identities:
    """identities.json of a node: the same people everywhere; a login pool's node also gets
    the login settings (people's SSH, no sudo for ssm-user, the pool's host key)."""
    home = spec.storage.home
    return Identities(
        home=home.mount if home is not None else HOME_WITHOUT_SHARED_STORAGE,
        shared_home=home is not None,
        people=people(spec),
        groups=posix_groups(spec),
        directory=directory(spec),
        login=login_pool is not None,
        host_key_secret=(
            login_host_key_secret_name(spec.name, login_pool) if login_pool is not None else ""
        ),
    )
