"""What the plan decides about job accounting (``slurm.accounting``): the accounting keys of
slurm.conf (the TRES that are recorded, enforcement, multifactor priority with fair share),
the database slurmdbd uses and the secret holding its password, the head node's MariaDB
(InnoDB sizes), the accounts, users and QoS the head applies with sacctmgr (with the QoS each
account inherits), and the price per pool the usage report charges. What the head's image
needs for it is slurmstack.plan.images.head_packages.

The head node's agent reads all of it from accounting.json (slurmstack.render.accounting
writes the contract's AccountingConfig). The password never passes through here: the stack
generates it into the secret, and the agent appends it to slurmdbd.conf on the head node.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from slurmstack.catalog import Catalog
from slurmstack.contract import (
    DEFAULT_QOS,
    DatabaseType,
    PoolPrice,
    accounting_password_secret_name,
)
from slurmstack.plan.cluster import ClusterPlan
from slurmstack.plan.pools import PoolPlan
from slurmstack.rules.accounting import (
    buffer_pool_mib,
    spec_rds_subnets,
    tracked_gres,
)
from slurmstack.spec import AccountingSpec, AccountSpec, QosSpec

# RDS for MariaDB: the engine line whose client protocol Debian's and Ubuntu's slurmdbd speak,
# and the parameter group family that goes with it.
RDS_ENGINE_VERSION = "10.11"
RDS_PARAMETER_FAMILY = "mariadb10.11"

# With accounts declared: no job without an association, association and QoS limits enforced,
# and a job started only if it can finish within its TRES-minutes limits (slurm.conf(5)).
ENFORCE = "associations,limits,qos,safe"
# slurmdbd's own advice (accounting_storage_mysql.c, _check_database_variables): InnoDB buffer
# pool 4 GiB (its size on the head: slurmstack.rules.accounting.buffer_pool_mib), redo log 64 MiB,
# lock wait 900 s, packets 16 MiB.
INNODB_LOG_FILE_MIB = 64
INNODB_LOCK_WAIT_TIMEOUT = 900
MAX_ALLOWED_PACKET_MIB = 16


@dataclass(frozen=True)
class DatabasePlan:
    type: DatabaseType
    host: str | None  # None: the ACCOUNTING_DB_HOST deploy parameter, at boot (rds)
    port: int
    name: str
    user: str
    password_secret: str  # Secrets Manager name or ARN
    stack_creates_secret: bool

    @property
    def local(self) -> bool:
        return self.type is DatabaseType.LOCAL

    @property
    def rds(self) -> bool:
        return self.type is DatabaseType.RDS


@dataclass(frozen=True)
class AccountingPlan:
    cluster: str
    database: DatabasePlan
    tres: tuple[str, ...]
    enforce: str | None
    priority: tuple[tuple[str, str], ...]  # slurm.conf priority keys, () for Slurm's default
    accounts: tuple[AccountSpec, ...]  # in the definition's order
    qos: tuple[QosSpec, ...]
    purge_months: int | None
    innodb_buffer_pool_mib: int
    prices: tuple[PoolPrice, ...]

    @property
    def users(self) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
        """(user, default account, accounts) for every user the accounts name; the default is
        the first account (in the definition's order) that names the user."""
        order: dict[str, list[str]] = {}
        for account in self.accounts:
            for user in account.users:
                accounts = order.setdefault(user, [])
                if account.name not in accounts:
                    accounts.append(account.name)
        return tuple((user, accts[0], tuple(accts)) for user, accts in sorted(order.items()))

    @property
    def accounts_parents_first(self) -> tuple[AccountSpec, ...]:
        """Accounts ordered so a parent comes before its children (sacctmgr adds a child only
        under an existing parent); a parent that is not declared (root) counts as present.
        Accounts in a cycle (refused by the checks) come last, in the definition's order."""
        declared = {a.name for a in self.accounts}
        placed: list[AccountSpec] = []
        done: set[str] = set()
        remaining = list(self.accounts)
        while remaining:
            ready = [a for a in remaining if a.parent not in declared or a.parent in done]
            for account in ready or remaining:
                placed.append(account)
                done.add(account.name)
            remaining = [a for a in remaining if a.name not in done]
        return tuple(placed)

    def effective_qos(self, account: AccountSpec) -> tuple[str, ...]:
        """An account without qos has its parent's (Slurm copies them down); root's is normal."""
        for current in self._lineage(account):
            if current.qos:
                return tuple(sorted(set(current.qos)))
        return (DEFAULT_QOS,)

    def effective_default_qos(self, account: AccountSpec) -> str | None:
        for current in self._lineage(account):
            if current.default_qos is not None:
                return current.default_qos
            if current.qos:
                return current.qos[0]
        return None

    def _lineage(self, account: AccountSpec) -> list[AccountSpec]:
        """``account`` and its declared ancestors, nearest first (a cycle stops the walk)."""
        by_name = {a.name: a for a in self.accounts}
        out: list[AccountSpec] = []
        current: AccountSpec | None = account
        while current is not None and current.name not in {a.name for a in out}:
            out.append(current)
            current = by_name.get(current.parent)
        return out


def _database(spec: AccountingSpec, cluster: str) -> DatabasePlan:
    db = spec.database
    if db.type is DatabaseType.EXTERNAL:
        host, secret, creates = db.host, db.password_secret or "", False
    elif db.type is DatabaseType.RDS:
        host, secret, creates = None, accounting_password_secret_name(cluster), True
    else:
        # slurmdbd reaches the local server through its socket ("localhost": MariaDB's client
        # library takes the socket for that name), so the server listens on no port at all.
        host, secret, creates = "localhost", accounting_password_secret_name(cluster), True
    return DatabasePlan(
        type=db.type,
        host=host,
        port=db.port,
        name=db.name,
        user=db.user,
        password_secret=secret,
        stack_creates_secret=creates,
    )


def pool_price(plan: ClusterPlan, pool: PoolPlan) -> PoolPrice:
    """The definition's cost.instance_hourly_usd, else the catalog's on-demand list price (as
    `slurmstack plan` prices the pool; spot and Capacity Block pools at that list price)."""
    gpus = pool.gpu.count if pool.gpu is not None else 0
    override = plan.spec.cost.instance_hourly_usd.get(pool.instance_type)
    if override is not None:
        price, source = override, "definition: cost.instance_hourly_usd"
    elif pool.facts.price is not None:
        facts = pool.facts.price
        price = facts.usd_per_hour
        source = f"catalog ({facts.source}): {facts.region} on-demand list price, {facts.date}"
    else:
        price, source = None, "no price: set cost.instance_hourly_usd"
    return PoolPrice(pool.name, pool.instance_type, price, source, gpus, pool.cpus)


def plan_rds_subnets(
    plan: ClusterPlan, catalog: Catalog
) -> tuple[tuple[ipaddress.IPv4Network, str], ...]:
    """The two subnets the stack makes in a new VPC for an rds database's subnet group."""
    return spec_rds_subnets(plan.spec, catalog)


def accounting_plan(plan: ClusterPlan) -> AccountingPlan | None:
    """The cluster's accounting, or None when slurm.accounting.enabled is false."""
    spec = plan.spec.slurm.accounting
    if not spec.enabled:
        return None
    accelerators = [(p.gpu.gres_name, p.gpu.gres_type) for p in plan.pools if p.gpu is not None]
    priority: tuple[tuple[str, str], ...] = ()
    if spec.accounts:
        # Written out, though 23.11 defaults to multifactor: 22.05 (the test host) does not.
        priority = (
            ("PriorityType", "priority/multifactor"),
            ("PriorityWeightFairshare", str(spec.fairshare_weight)),
        )
        if spec.qos:
            priority += (("PriorityWeightQOS", str(spec.qos_weight)),)
    return AccountingPlan(
        cluster=plan.name,
        database=_database(spec, plan.name),
        tres=tracked_gres(accelerators),
        enforce=ENFORCE if spec.accounts and spec.enforce else None,
        priority=priority,
        accounts=tuple(spec.accounts),
        qos=tuple(spec.qos),
        purge_months=spec.keep_job_records_months,
        innodb_buffer_pool_mib=buffer_pool_mib(plan.head.facts.memory_mib),
        prices=tuple(pool_price(plan, pool) for pool in plan.pools),
    )
