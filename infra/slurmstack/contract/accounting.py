"""accounting.json: what the head's agent knows about accounting, written by render."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .aws import SLURMDBD_PORT

__all__ = [
    "DEFAULT_QOS",
    "ROOT_ACCOUNT",
    "AccountingAccount",
    "AccountingConfig",
    "AccountingDatabase",
    "AccountingQos",
    "AccountingUser",
    "DatabaseType",
    "PoolPrice",
]

# --- accounting.json ----------------------------------------------------------------------


# Slurm's own objects: the root of every cluster's association tree, and the QoS slurmdbd
# creates. slurmstack never creates, changes or removes them.
ROOT_ACCOUNT = "root"
DEFAULT_QOS = "normal"


class DatabaseType(enum.StrEnum):
    """Where slurmdbd keeps its records (slurm.accounting.database.type)."""

    LOCAL = "local"  # MariaDB on the head node, its data on the state volume
    EXTERNAL = "external"  # a MySQL-compatible server the user runs
    RDS = "rds"  # an RDS for MariaDB instance the stack creates


@dataclass(frozen=True)
class AccountingDatabase:
    type: DatabaseType
    host: str | None  # None: the ACCOUNTING_DB_HOST parameter, at boot (rds)
    port: int
    name: str
    user: str
    password_secret: str  # Secrets Manager name or ARN

    @property
    def local(self) -> bool:
        return self.type is DatabaseType.LOCAL


@dataclass(frozen=True)
class AccountingQos:
    name: str
    description: str
    priority: int
    max_wall_minutes: int | None
    max_jobs_per_user: int | None
    max_tres_per_user: dict[str, int]  # TRES name -> limit (mem in MiB)
    max_tres_per_job: dict[str, int]
    grp_tres: dict[str, int]


@dataclass(frozen=True)
class AccountingAccount:
    """An account as sacctmgr shows its association: qos and default_qos are the effective ones
    (an account without its own has its parent's)."""

    name: str
    description: str
    parent: str
    fairshare: int
    qos: tuple[str, ...]
    default_qos: str | None
    grp_tres: dict[str, int]


@dataclass(frozen=True)
class AccountingUser:
    name: str
    default_account: str
    accounts: tuple[str, ...]  # the default first


@dataclass(frozen=True)
class PoolPrice:
    """What the usage report charges for a pool's nodes."""

    name: str
    instance_type: str
    usd_per_hour: float | None  # None: no price known (left out of costs, and said so)
    price_source: str
    gpus: int  # accelerators per node
    cpus: int  # per node


@dataclass(frozen=True)
class AccountingConfig:
    """What the head node's agent knows about accounting (ACCOUNTING_CONFIG_PATH), written by
    render for every head, so the agent also learns that accounting is off. Accounts come
    parents first (sacctmgr adds a child under an existing parent)."""

    cluster: str
    enabled: bool
    slurmdbd_port: int = SLURMDBD_PORT
    database: AccountingDatabase | None = None
    qos: tuple[AccountingQos, ...] = ()
    accounts: tuple[AccountingAccount, ...] = ()
    users: tuple[AccountingUser, ...] = ()
    pools: tuple[PoolPrice, ...] = ()
