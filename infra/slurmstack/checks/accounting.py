"""Accounting: slurm.accounting's database, and the accounts, users and QoS that reference
each other (and the pools' GPUs) by name."""

from __future__ import annotations

import re
from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import (
    error,
    gib,
    head_facts,
    pools_with_facts,
    suggestion,
    warning,
)
from slurmstack.contract import DEFAULT_QOS, ROOT_ACCOUNT, DatabaseType
from slurmstack.findings import Finding
from slurmstack.rules.accounting import (
    HEAD_MEMORY_SHARE_OF_BUFFER_POOL,
    INNODB_BUFFER_POOL_MAX_MIB,
    RDS_MAX_USER_LENGTH,
    RDS_SUBNET_PREFIX,
    SLURMDBD_BUFFER_POOL_FLOOR_MIB,
    buffer_pool_mib,
    known_tres,
    spec_rds_subnets,
)
from slurmstack.spec import AccountingSpec, ClusterSpec

PATH = "slurm.accounting"
# Database fields that only an rds database uses.
RDS_ONLY = frozenset({"instance_class", "storage_gib", "subnet_ids"})


def _accounting(spec: ClusterSpec) -> AccountingSpec:
    return spec.slurm.accounting


# why: with accounting off nothing applies accounts or QoS; they would be ignored in silence.
@rule
def accounting_off_with_objects(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    acct = _accounting(spec)
    if not acct.enabled:
        for kind in ("accounts", "qos"):
            if getattr(acct, kind):
                yield error(
                    f"{PATH}.{kind}",
                    f"{kind} need accounting, which slurm.accounting.enabled turns off; set "
                    f"enabled: true or remove the {kind}",
                )


# why: an external database needs a host and a password; for the local and rds databases the
# stack decides both, so a host or secret given there would be ignored.
@rule
def accounting_database_fields(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    db = _accounting(spec).database
    path = f"{PATH}.database"
    if db.type is DatabaseType.EXTERNAL:
        if db.host is None:
            yield error(f"{path}.host", "an external database needs host: its server's name")
        if db.password_secret is None:
            yield error(
                f"{path}.password_secret",
                "an external database needs password_secret: the name or ARN of the Secrets "
                "Manager secret holding the database user's password",
            )
        return
    for field in ("host", "password_secret"):
        if getattr(db, field) is not None:
            yield error(
                f"{path}.{field}",
                f"{field} is for type: external; a {db.type.value} database gets its "
                f"{'address' if field == 'host' else 'password'} from the stack: remove it",
            )
    if db.type is not DatabaseType.RDS:
        for field in sorted(RDS_ONLY & db.model_fields_set):
            yield error(
                f"{path}.{field}",
                f"{field} is for type: rds; a {db.type.value} database does not use it: remove it",
            )


# why: RDS needs a DB subnet group in two zones, which a new VPC must have room for and an
# existing VPC must name, and takes master user names of at most 16 characters.
@rule
def accounting_rds_network(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    acct = _accounting(spec)
    db = acct.database
    if not acct.enabled or db.type is not DatabaseType.RDS:
        return
    path = f"{PATH}.database"
    if len(db.user) > RDS_MAX_USER_LENGTH:
        yield error(
            f"{path}.user",
            f"RDS takes master user names of at most {RDS_MAX_USER_LENGTH} characters "
            f"({db.user!r} has {len(db.user)})",
        )
    if spec.network.vpc_id is not None:
        if len(set(db.subnet_ids)) < 2:
            yield error(
                f"{path}.subnet_ids",
                "with an existing VPC (network.vpc_id) an rds database needs subnet_ids: two or "
                "more subnets of that VPC in different zones, for its DB subnet group",
            )
        return
    if db.subnet_ids:
        yield error(
            f"{path}.subnet_ids",
            "subnet_ids is for an existing VPC (network.vpc_id); a new VPC gets the database's "
            "subnets made for it: remove them",
        )
        return
    try:
        room = spec_rds_subnets(spec, catalog)
    except ValueError:
        return  # a VPC too small to carve: the network rules say why
    if spec.network.vpc_cidr is not None and not room:
        yield error(
            f"{path}.type",
            f"an rds database needs two free /{RDS_SUBNET_PREFIX} blocks of the VPC outside the "
            "compute and public subnets, in two zones of the region; give a larger "
            "network.vpc_cidr or a smaller compute subnet (a longer "
            "network.compute_subnet_prefix)",
        )


# RDS's rule for the master user name (RDS API Reference, CreateDBInstance, MasterUsername:
# "1 to 16 letters, numbers, or underscores. First character must be a letter. Can't be a
# reserved word for the chosen database engine") and for the database name (DBName, MariaDB:
# begins with a letter, then letters, digits or underscores, not a reserved word). The words
# are MariaDB's reserved words a name could plausibly be (MariaDB Knowledge Base, "Reserved
# Words"), and rdsadmin, the user RDS itself runs as on RDS for MariaDB.
RDS_NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
MARIADB_RESERVED_WORDS = frozenset(
    """accessible add all alter analyze and as asc before between both by call cascade case
    change char check collate column condition constraint continue convert create cross
    current_user cursor database databases default delayed delete desc describe distinct drop
    each else exists exit explain false fetch for force foreign from grant group having if
    ignore in index inner insert interval into is join key keys kill leading leave left like
    limit lines load lock loop match mod natural not null on option or order out outer
    primary procedure purge range read reads references regexp release rename repeat replace
    require restrict return revoke right rlike schema schemas select set show signal table
    then to trailing trigger true undo union unique unlock update usage use using values when
    where while with write""".split()  # noqa: SIM905
) | {"rdsadmin"}


# why: RDS refuses the instance (InvalidParameterValue) only at deploy time, after the VPC,
# FSx and the rest are made.
@rule
def accounting_rds_names(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    acct = _accounting(spec)
    db = acct.database
    if not acct.enabled or db.type is not DatabaseType.RDS:
        return
    for field, value, what in (("user", db.user, "master user"), ("name", db.name, "database")):
        path = f"{PATH}.database.{field}"
        if not RDS_NAME_PATTERN.match(value):
            yield error(
                path,
                f"RDS takes a {what} name that starts with a letter and holds only letters, "
                f"digits and underscores ({value!r} does not)",
            )
        elif value.lower() in MARIADB_RESERVED_WORDS:
            yield error(
                path,
                f"{value!r} is a reserved word of MariaDB (or RDS's own user), which RDS "
                f"refuses as a {what} name; choose another, e.g. 'slurm'",
            )


def _duplicates(names: list[str]) -> Iterator[tuple[int, str]]:
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name in seen:
            yield index, name
        seen.add(name)


# why: sacctmgr knows one account per name; two entries would overwrite each other.
@rule
def accounting_account_duplicate(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    accounts = [a.name for a in _accounting(spec).accounts]
    for index, name in _duplicates(accounts):
        yield error(f"{PATH}.accounts[{index}].name", f"account {name!r} is declared twice")


# why: one QoS per name; two entries with different limits would fight on every apply.
@rule
def accounting_qos_duplicate(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    names = [q.name for q in _accounting(spec).qos]
    for index, name in _duplicates(names):
        yield error(f"{PATH}.qos[{index}].name", f"QoS {name!r} is declared twice")


# why: root (the association tree's root) and normal (slurmdbd's default QoS) are Slurm's own:
# slurmstack never changes or removes them, so it cannot take them over from the definition.
@rule
def accounting_reserved_name(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    acct = _accounting(spec)
    for index, account in enumerate(acct.accounts):
        if account.name == ROOT_ACCOUNT:
            yield error(
                f"{PATH}.accounts[{index}].name",
                "root is the root of Slurm's account tree, not an account to declare; "
                "accounts without a parent hang under it",
            )
    for index, qos in enumerate(acct.qos):
        if qos.name == DEFAULT_QOS:
            yield error(
                f"{PATH}.qos[{index}].name",
                "normal is the QoS slurmdbd creates itself; give your QoS another name",
            )


# why: sacctmgr refuses an account under a parent that does not exist.
@rule
def accounting_parent_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    accounts = _accounting(spec).accounts
    names = [a.name for a in accounts]
    for index, account in enumerate(accounts):
        if account.parent != ROOT_ACCOUNT and account.parent not in names:
            yield error(
                f"{PATH}.accounts[{index}].parent",
                f"parent {account.parent!r} is not a declared account"
                f"{suggestion(account.parent, names, catalog)}; use root or one of: "
                f"{', '.join(names)}",
            )


# why: the account tree must be a tree; a loop has no root to hang it under.
@rule
def accounting_parent_cycle(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    accounts = _accounting(spec).accounts
    # An account named root is refused on its own (accounting-reserved-name).
    parent = {a.name: a.parent for a in accounts if a.name != ROOT_ACCOUNT}
    reported: set[str] = set()
    for index, account in enumerate(accounts):
        if account.name == ROOT_ACCOUNT:
            continue
        chain = [account.name]
        current = account.parent
        while current in parent and current not in chain:
            chain.append(current)
            current = parent[current]
        if current == account.name and account.name not in reported:
            loop = [*chain[chain.index(current) :], current]
            reported.update(loop)
            yield error(
                f"{PATH}.accounts[{index}].parent",
                f"accounts form a loop: {' -> '.join(loop)}; one of them must have parent root "
                "or another account outside the loop",
            )


# why: sacctmgr refuses an association with a QoS that does not exist.
@rule
def accounting_qos_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    acct = _accounting(spec)
    declared = [q.name for q in acct.qos]
    known = [*declared, DEFAULT_QOS]
    for index, account in enumerate(acct.accounts):
        references = [(f"qos[{i}]", name) for i, name in enumerate(account.qos)]
        if account.default_qos is not None:
            references.append(("default_qos", account.default_qos))
        for field, name in references:
            if name not in known:
                yield error(
                    f"{PATH}.accounts[{index}].{field}",
                    f"QoS {name!r} is not declared in slurm.accounting.qos"
                    f"{suggestion(name, known, catalog)}; known: {', '.join(known)}",
                )


# why: a default QoS the account may not use makes Slurm refuse every job that names none.
@rule
def accounting_default_qos_not_allowed(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, account in enumerate(_accounting(spec).accounts):
        default = account.default_qos
        if default is not None and account.qos and default not in account.qos:
            yield error(
                f"{PATH}.accounts[{index}].default_qos",
                f"default_qos {default!r} is not among the account's qos "
                f"({', '.join(account.qos)}); add it there or pick one of them",
            )


# why: a user named twice in one account is a typo for another user, most likely.
@rule
def accounting_user_repeated(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, account in enumerate(_accounting(spec).accounts):
        for position, user in _duplicates(account.users):
            yield error(
                f"{PATH}.accounts[{index}].users[{position}]",
                f"user {user!r} is listed twice in account {account.name!r}",
            )


# why: slurmdbd records only the TRES slurm.conf tracks, so a limit on a GPU type no pool has
# is refused by sacctmgr ("Unknown TRES") or never binds.
@rule
def accounting_tres_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    accelerators = [
        (pf.facts.accelerator.kind, pf.facts.accelerator.gres_type)
        for pf in pools_with_facts(spec, catalog)
        if pf.facts.accelerator is not None
    ]
    known = list(known_tres(accelerators))
    acct = _accounting(spec)
    limits: list[tuple[str, dict[str, int]]] = []
    for index, qos in enumerate(acct.qos):
        for field in ("max_tres_per_user", "max_tres_per_job", "grp_tres"):
            limits.append((f"{PATH}.qos[{index}].{field}", getattr(qos, field)))
    for index, account in enumerate(acct.accounts):
        limits.append((f"{PATH}.accounts[{index}].grp_tres", account.grp_tres))
    for path, values in limits:
        for name in values:
            if name not in known:
                yield error(
                    f"{path}.{name}",
                    f"{name} is not a resource this cluster tracks"
                    f"{suggestion(name, known, catalog)}; tracked: {', '.join(known)}",
                )


# why: QoS limits are enforced only with enforcement on, which needs accounts to put users in;
# QoS alone would be advertised limits that never bind.
@rule
def accounting_qos_without_accounts(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    acct = _accounting(spec)
    if acct.enabled and acct.qos and (not acct.accounts or not acct.enforce):
        reason = "no account is declared" if not acct.accounts else "enforce is false"
        yield warning(
            f"{PATH}.qos",
            f"{reason}, so Slurm does not enforce these QoS' limits (AccountingStorageEnforce "
            "stays off); declare accounts for your users, with enforce: true",
        )


def _larger_in_family(instance_type: str, memory_mib: int, catalog: Catalog) -> str | None:
    """The smallest type of the same family (m7i, r7i, ...) with at least ``memory_mib``."""
    family = instance_type.split(".", 1)[0]
    fitting = [
        (facts.memory_mib, name)
        for name, facts in catalog.instances.items()
        if name.split(".", 1)[0] == family and facts.memory_mib >= memory_mib
    ]
    return min(fitting)[1] if fitting else None


# A local database runs MariaDB on the head node beside slurmctld and slurmdbd, with an eighth
# of the head's memory as its buffer pool (slurmstack.rules.accounting.buffer_pool_mib); Slurm's
# accounting guide asks for at least 4 GiB.
# why: below 16 GiB of memory the buffer pool is under the 2 GiB at which slurmdbd reports
# "Database settings not recommended values" at every start (_check_database_variables).
@rule
def accounting_head_memory(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    accounting = _accounting(spec)
    facts = head_facts(spec, catalog)
    if not accounting.enabled or accounting.database.type is not DatabaseType.LOCAL:
        return
    if facts is None:
        return
    pool_mib = buffer_pool_mib(facts.memory_mib)
    if pool_mib >= SLURMDBD_BUFFER_POOL_FLOOR_MIB:
        return
    needed = SLURMDBD_BUFFER_POOL_FLOOR_MIB * HEAD_MEMORY_SHARE_OF_BUFFER_POOL
    instead = _larger_in_family(spec.head_node.instance_type, needed, catalog)
    example = f" (e.g. {instead})" if instead else ""
    yield warning(
        "head_node.instance_type",
        f"head node {spec.head_node.instance_type} ({facts.vcpus} vCPUs, "
        f"{gib(facts.memory_mib)}) runs slurmctld, slurmdbd and MariaDB (the accounting "
        f"database is local); MariaDB's buffer pool gets an eighth of its memory, {gib(pool_mib)}, "
        f"below the {gib(SLURMDBD_BUFFER_POOL_FLOOR_MIB)} under which slurmdbd reports "
        "'Database settings not recommended values' (Slurm's accounting guide asks for "
        f"{gib(INNODB_BUFFER_POOL_MAX_MIB)}); give the head at least {gib(needed)}{example}, "
        "or set slurm.accounting.database.type: rds",
    )
