"""Job accounting, derived once from ``slurm.accounting`` and the plan (pure, no Pulumi).

What it decides: the accounting keys of slurm.conf (slurmdbd's host and port, the TRES that are
recorded, enforcement, multifactor priority with fair share), slurmdbd.conf without its
password, the head node's MariaDB (data directory on the state volume, InnoDB sizes), the
Secrets Manager secret that holds the database password, the accounts, users and QoS the head
node applies with sacctmgr, and the price per pool that the usage report charges.

The head node's agent reads all of it from one file, ``accounting.json`` (node_config), so
the agent stays standard-library only. The password never passes through here: the stack
generates it into the secret, and the agent appends it to slurmdbd.conf on the head node.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass

from slurmstack.catalog import Catalog
from slurmstack.plan import STATE_VOLUME_MOUNT, ClusterPlan, DeployParameter, PoolPlan
from slurmstack.spec import AccountingSpec, AccountSpec, DatabaseType, QosSpec

# slurmdbd's port (slurmdbd.conf DbdPort, slurm.conf AccountingStoragePort): Slurm's default.
# Only the head node talks to it (slurmctld, sacct and sacctmgr run there), so no security
# group opens it.
SLURMDBD_PORT = 6819

# Files on the head node. The rendered slurmdbd.conf holds no password: the agent
# (`slurmstack-node accounting-db`) writes the live file, 0600 and owned by SlurmUser as
# slurmdbd demands, from it and the secret.
SLURMDBD_CONF_PATH = "/etc/slurm/slurmdbd.conf"
SLURMDBD_CONF_RENDERED_PATH = "/etc/slurmstack/slurmdbd.conf"
ACCOUNTING_CONFIG_PATH = "/etc/slurmstack/accounting.json"
# Sorts after Debian/Ubuntu's 50-server.cnf, so its datadir wins.
MARIADB_CONF_PATH = "/etc/mysql/mariadb.conf.d/90-slurmstack.cnf"
MARIADB_DROPIN_PATH = "/etc/systemd/system/mariadb.service.d/slurmstack.conf"
SLURMDBD_DROPIN_PATH = "/etc/systemd/system/slurmdbd.service.d/slurmstack.conf"
# slurmdbd's pid file in its RuntimeDirectory (the 23.11 unit runs it as SlurmUser, who
# cannot write /run itself), and its log next to slurmctld's.
SLURMDBD_PID_FILE = "/run/slurmdbd/slurmdbd.pid"
SLURMDBD_LOG_FILE = "/var/log/slurm/slurmdbd.log"

# On the head's state volume, which outlives the instance: a replacement head mounts it and
# finds the database, and the record of what slurmstack created in it, as they were.
MARIADB_DATA_DIR = f"{STATE_VOLUME_MOUNT}/mariadb"
OWNED_STATE_PATH = f"{STATE_VOLUME_MOUNT}/slurmstack/accounting-owned.json"

# What the head image needs for a local database (the image build installs them; nothing
# is installed at boot). mariadb-server brings the mariadb client and mariadb-install-db.
HEAD_PACKAGES = ("slurmdbd", "mariadb-server")

# The RDS option: the instance's address is known only once it exists, so the stack publishes
# it as this deploy-time SSM parameter (under the cluster's prefix) and the agent waits for it.
DB_HOST_PARAMETER = DeployParameter.ACCOUNTING_DB_HOST.value
# RDS for MariaDB: the engine line whose client protocol Debian's and Ubuntu's slurmdbd speak,
# and the parameter group family that goes with it.
RDS_ENGINE_VERSION = "10.11"
RDS_PARAMETER_FAMILY = "mariadb10.11"
# A DB subnet group spans at least two zones (RDS User Guide, "Working with a DB instance in a
# VPC"); a new VPC gets two subnets of this size for it, outside the compute and public ones.
RDS_SUBNET_PREFIX = 28
# RDS for MariaDB master user names: 1 to 16 letters and digits (CreateDBInstance).
RDS_MAX_USER_LENGTH = 16

# With accounts declared: no job without an association, association and QoS limits enforced,
# and a job started only if it can finish within its TRES-minutes limits (slurm.conf(5)).
ENFORCE = "associations,limits,qos,safe"
# slurmdbd's own advice (accounting_storage_mysql.c, _check_database_variables): InnoDB buffer
# pool 4 GiB, redo log 64 MiB, lock wait 900 s, packets 16 MiB. The buffer pool is held to an
# eighth of the head's memory, where slurmctld runs too, and at least 128 MiB.
INNODB_BUFFER_POOL_MAX_MIB = 4096
INNODB_BUFFER_POOL_MIN_MIB = 128
INNODB_LOG_FILE_MIB = 64
INNODB_LOCK_WAIT_TIMEOUT = 900
MAX_ALLOWED_PACKET_MIB = 16

# Slurm's own objects: the root of every cluster's association tree, and the QoS slurmdbd
# creates. slurmstack never creates, changes or removes them.
ROOT_ACCOUNT = "root"
DEFAULT_QOS = "normal"
# Plain TRES a limit may name besides the pools' GRES (mem in MiB).
BASE_TRES = ("cpu", "mem", "node", "billing")


def password_secret_name(cluster: str) -> str:
    """The secret the stack creates for the local and rds databases."""
    return f"slurmstack/{cluster}/accounting-db-password"


def tracked_gres(accelerators: list[tuple[str, str]]) -> tuple[str, ...]:
    """AccountingStorageTRES from (GRES name, type) per accelerator pool: gres/gpu always (a
    GPU pool may be added later), each kind untyped (every device of it, whatever the type the
    job asked for), and each kind:type (only jobs that asked for that type; slurm.conf(5))."""
    names = {"gres/gpu"}
    for gres, gres_type in accelerators:
        names |= {f"gres/{gres}", f"gres/{gres}:{gres_type}"}
    return tuple(sorted(names))


def known_tres(accelerators: list[tuple[str, str]]) -> tuple[str, ...]:
    """TRES a limit may name on this cluster."""
    return (*BASE_TRES, *tracked_gres(accelerators))


@dataclass(frozen=True)
class DatabasePlan:
    type: DatabaseType
    host: str | None  # None: the DB_HOST_PARAMETER, at boot (rds)
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
class PoolPrice:
    """What the usage report charges for a pool's nodes."""

    pool: str
    instance_type: str
    usd_per_hour: float | None  # None: no price known (left out of costs, and said so)
    source: str
    gpus: int  # per node
    cpus: int  # per node

    @property
    def usd_per_gpu_hour(self) -> float | None:
        if self.usd_per_hour is None or not self.gpus:
            return None
        return self.usd_per_hour / self.gpus


@dataclass(frozen=True)
class AccountingPlan:
    cluster: str
    head_host: str
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
    def port(self) -> int:
        return SLURMDBD_PORT

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
        return _parents_first(list(self.accounts))


def _parents_first(accounts: list[AccountSpec]) -> tuple[AccountSpec, ...]:
    """Accounts ordered so a parent comes before its children (sacctmgr adds a child only under
    an existing parent); a parent that is not declared (root) counts as present. Accounts in a
    cycle (refused by the checks) come last, in the definition's order."""
    by_name = {a.name: a for a in accounts}
    placed: list[AccountSpec] = []
    done: set[str] = set()
    remaining = list(accounts)
    while remaining:
        ready = [a for a in remaining if a.parent not in by_name or a.parent in done]
        if not ready:
            ready = remaining
        for account in ready:
            placed.append(account)
            done.add(account.name)
        remaining = [a for a in remaining if a.name not in done]
    return tuple(placed)


def _database(spec: AccountingSpec, cluster: str) -> DatabasePlan:
    db = spec.database
    if db.type is DatabaseType.EXTERNAL:
        host, secret, creates = db.host, db.password_secret or "", False
    elif db.type is DatabaseType.RDS:
        host, secret, creates = None, password_secret_name(cluster), True
    else:
        # slurmdbd reaches the local server through its socket ("localhost": MariaDB's client
        # library takes the socket for that name), so the server listens on no port at all.
        host, secret, creates = "localhost", password_secret_name(cluster), True
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


def rds_subnets(
    vpc: ipaddress.IPv4Network | None,
    taken: list[ipaddress.IPv4Network],
    zone: str,
    zones: list[str],
) -> tuple[tuple[ipaddress.IPv4Network, str], ...]:
    """Two subnets for a new VPC's DB subnet group: the first two /28 blocks of the VPC that
    overlap none of ``taken`` (the compute and public subnets), in the cluster's zone and the
    next zone of the region; () when the VPC or the region has no room for them."""
    other = [z for z in zones if z != zone]
    if vpc is None or not other or vpc.prefixlen > RDS_SUBNET_PREFIX:
        return ()
    free = [
        block
        for block in vpc.subnets(new_prefix=RDS_SUBNET_PREFIX)
        if not any(block.overlaps(t) for t in taken)
    ]
    if len(free) < 2:
        return ()
    return ((free[0], zone), (free[1], other[0]))


def plan_rds_subnets(
    plan: ClusterPlan, catalog: Catalog
) -> tuple[tuple[ipaddress.IPv4Network, str], ...]:
    region = catalog.regions.get(plan.region)
    taken = [n for n in (plan.compute_subnet_cidr, plan.public_subnet_cidr) if n is not None]
    zones = list(region.zones) if region is not None else []
    return rds_subnets(plan.vpc_cidr, taken, plan.availability_zone, zones)


def head_packages(plan: ClusterPlan) -> tuple[str, ...]:
    """The Debian/Ubuntu packages the head image needs for this cluster's accounting (the image
    build installs them; nothing is installed at boot): slurmdbd, and MariaDB's server for the
    local database."""
    accounting = accounting_plan(plan)
    if accounting is None:
        return ()
    return HEAD_PACKAGES if accounting.database.local else ("slurmdbd",)


def buffer_pool_mib(head_memory_mib: int) -> int:
    eighth = head_memory_mib // 8 // 128 * 128
    return max(INNODB_BUFFER_POOL_MIN_MIB, min(INNODB_BUFFER_POOL_MAX_MIB, eighth))


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
        head_host=f"{plan.name}-head",
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


# --- what the head node's agent reads (accounting.json) ---------------------------------


def _effective_qos(account: AccountSpec, by_name: dict[str, AccountSpec]) -> list[str]:
    """An account without qos has its parent's (Slurm copies them down), root's is normal."""
    seen: set[str] = set()
    current: AccountSpec | None = account
    while current is not None and current.name not in seen:
        if current.qos:
            return sorted(set(current.qos))
        seen.add(current.name)
        current = by_name.get(current.parent)
    return [DEFAULT_QOS]


def _effective_default_qos(account: AccountSpec, by_name: dict[str, AccountSpec]) -> str | None:
    seen: set[str] = set()
    current: AccountSpec | None = account
    while current is not None and current.name not in seen:
        if current.default_qos is not None:
            return current.default_qos
        if current.qos:
            return current.qos[0]
        seen.add(current.name)
        current = by_name.get(current.parent)
    return None


def _qos_entry(qos: QosSpec) -> dict[str, object]:
    return {
        "name": qos.name,
        "description": qos.description or qos.name,
        "priority": qos.priority,
        "max_wall_minutes": qos.max_wall_minutes,
        "max_jobs_per_user": qos.max_jobs_per_user,
        "max_tres_per_user": dict(sorted(qos.max_tres_per_user.items())),
        "max_tres_per_job": dict(sorted(qos.max_tres_per_job.items())),
        "grp_tres": dict(sorted(qos.grp_tres.items())),
    }


def node_config(plan: ClusterPlan) -> str:
    """accounting.json: everything the head node's agent needs for accounting-db,
    accounting-apply and the usage report. Written for a disabled accounting too, so the agent
    knows it is off."""
    acct = accounting_plan(plan)
    if acct is None:
        data: dict[str, object] = {
            "generated_by": "slurmstack",
            "cluster": plan.name,
            "enabled": False,
        }
        return json.dumps(data, indent=2, sort_keys=True) + "\n"
    by_name = {a.name: a for a in acct.accounts}
    db = acct.database
    data = {
        "generated_by": "slurmstack",
        "cluster": acct.cluster,
        "enabled": True,
        "database": {
            "type": db.type.value,
            "host": db.host,
            "host_parameter": None if db.host is not None else DB_HOST_PARAMETER,
            "port": db.port,
            "name": db.name,
            "user": db.user,
            "password_secret": db.password_secret,
            "data_dir": MARIADB_DATA_DIR if db.local else None,
        },
        "slurmdbd": {
            "conf": SLURMDBD_CONF_PATH,
            "rendered_conf": SLURMDBD_CONF_RENDERED_PATH,
            "port": acct.port,
        },
        "owned_state": OWNED_STATE_PATH,
        "qos": [_qos_entry(q) for q in acct.qos],
        "accounts": [
            {
                "name": a.name,
                "description": a.description or a.name,
                "parent": a.parent,
                "fairshare": a.fairshare,
                "qos": _effective_qos(a, by_name),
                "default_qos": _effective_default_qos(a, by_name),
                "grp_tres": dict(sorted(a.grp_tres.items())),
            }
            for a in acct.accounts_parents_first
        ],
        "users": [
            {"name": user, "default_account": default, "accounts": list(accounts)}
            for user, default, accounts in acct.users
        ],
        "pools": [
            {
                "name": p.pool,
                "instance_type": p.instance_type,
                "usd_per_hour": p.usd_per_hour,
                "price_source": p.source,
                "gpus": p.gpus,
                "cpus": p.cpus,
            }
            for p in acct.prices
        ],
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
