"""accounting-db (head): the accounting database and slurmdbd, up before slurmctld needs them.

local database: MariaDB's data directory on the state volume, made once (a replacement head
finds it there), the server moved onto it, and slurmdbd's database user with the password from
Secrets Manager. external and rds: the server is someone else's; only slurmdbd is set up.
Then slurmdbd.conf: the rendered copy (no password) with StorageHost (rds: from its deploy
parameter) and StoragePass appended, 0600 and owned by SlurmUser as slurmdbd demands; slurmdbd
is restarted when the file changed, and waited for on its port. On the backup controller
(head_node.backup) slurmdbd is DbdBackupHost: it runs "in background mode" and listens only once
it takes over from the head's (slurmdbd.c, run_dbd_backup), so there the wait is for its unit to
be running. Idempotent: run at boot and by the apply-config document before every `scontrol
reconfigure`.

The password is read by root only (the instance role, behind the metadata firewall), passed to
the database client on its standard input, and never printed or put on a command line.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...contract import (
    ACCOUNTING_COMMANDS,
    ACCOUNTING_CONFIG_PATH,
    LOCAL_DATABASE_COMMANDS,
    MARIADB_DATA_DIR,
    MARIADB_SOCKET,
    MARIADB_UNIT,
    SLURMDBD_CONF_PATH,
    SLURMDBD_CONF_RENDERED_PATH,
    SLURMDBD_UNIT,
    AccountingConfig,
    AccountingDatabase,
    DeployParameter,
    load_document,
)
from .. import system
from ..active import on_backup
from ..context import AgentError, Context, log, write_atomic

MYSQL_USER = "mysql"
SLURM_USER = "slurm"
# Characters slurmdbd.conf can carry in a value without quoting: printable ASCII but blanks and
# quotes ('#' and '\\' are escaped with a backslash, which Slurm's parser strips).
_UNQUOTABLE = frozenset(" \t\"'")
IMAGE_CONTRACT_DOC = "the image contract: README, 'Images'"


class AccountingOff(Exception):
    """accounting.json says accounting is off (or is missing: an older configuration)."""


def accounting_config(ctx: Context) -> AccountingConfig:
    """accounting.json; AccountingOff when it says accounting is off (or is missing)."""
    path = ctx.path(ACCOUNTING_CONFIG_PATH)
    if not path.exists():
        raise AccountingOff(f"{ACCOUNTING_CONFIG_PATH} is missing")
    config = load_document(AccountingConfig, path.read_text())
    if not config.enabled:
        raise AccountingOff("slurm.accounting.enabled is false")
    return config


def require_accounting(ctx: Context) -> AccountingConfig:
    try:
        return accounting_config(ctx)
    except AccountingOff as off:
        raise AgentError(f"accounting is off ({off})") from None


def sql_string(value: str) -> str:
    """A single-quoted SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_identifier(value: str) -> str:
    return "`" + value.replace("`", "``") + "`"


def database_user_sql(user: str, password: str, database: str) -> str:
    """slurmdbd's database and its user on the local server, with this password (set again on
    every run, so a rotated secret takes effect) and every privilege on that database.

    The database is made here, not left to slurmdbd: slurmdbd's first connection names it, and
    when it is missing slurmdbd creates it and connects again on the same handle
    (mysql_db_get_db_connection, src/database/mysql_common.c). MariaDB's client library 3.4
    (libmariadb3 of MariaDB 11.x, Debian 14's) frees a handle's options when a connection fails
    and allocates them again zeroed, its limit on a result's columns (mysql_init's default
    0xfffff) becoming 0: slurmdbd's next query, its first, then fails with error 5027
    ("Number of columns in result (=1) ... exceeds maximum allowed number of columns (=0)").
    With the database already there the first connection succeeds, so the handle keeps what
    mysql_init gave it (docs/slurm-versions.md)."""
    account = f"{sql_string(user)}@'localhost'"
    return (
        f"CREATE DATABASE IF NOT EXISTS {sql_identifier(database)};\n"
        f"CREATE USER IF NOT EXISTS {account} IDENTIFIED BY {sql_string(password)};\n"
        f"ALTER USER {account} IDENTIFIED BY {sql_string(password)};\n"
        f"GRANT ALL PRIVILEGES ON {sql_identifier(database)}.* TO {account};\n"
    )


def conf_value(value: str, what: str) -> str:
    """``value`` written so Slurm's parser reads it back unchanged."""
    bad = [c for c in value if c in _UNQUOTABLE or not c.isprintable() or not c.isascii()]
    if not value or bad:
        raise AgentError(
            f"{what} must be printable ASCII without blanks or quotes ({len(bad)} character(s) "
            "are not); slurmdbd.conf cannot carry it"
        )
    return value.replace("\\", "\\\\").replace("#", "\\#")


def slurmdbd_conf(rendered: str, password: str, host: str | None = None) -> str:
    """The live slurmdbd.conf: the rendered file, then what only the head node may know."""
    text = rendered if rendered.endswith("\n") else rendered + "\n"
    if host is not None:
        text += f"StorageHost={conf_value(host, 'the database host')}\n"
    return text + f"StoragePass={conf_value(password, 'the database password')}\n"


def install_db_command(data_dir: str) -> list[str]:
    """mariadb-install-db for an empty data directory: root logs in through the socket only
    (unix_socket authentication, no password to keep), and no test database."""
    return [
        "mariadb-install-db",
        f"--user={MYSQL_USER}",
        f"--datadir={data_dir}",
        "--auth-root-authentication-method=socket",
        "--skip-test-db",
    ]


def client_command(socket_path: str) -> list[str]:
    return ["mariadb", f"--socket={socket_path}", "--user=root", "--batch", "--skip-column-names"]


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def missing_commands(database: AccountingDatabase) -> list[str]:
    """What the head image lacks for this database (the boot's contract check names the same
    commands; this catches accounting turned on later for an image of one's own)."""
    wanted = [*ACCOUNTING_COMMANDS, *(LOCAL_DATABASE_COMMANDS if database.local else ())]
    return [name for name in wanted if shutil.which(name) is None]


def database_password(ctx: Context, secret: str) -> str:
    value = ctx.aws.secretsmanager().get_secret_value(SecretId=secret)
    password = value.get("SecretString")
    if not password:
        raise AgentError(f"secret {secret} holds no SecretString (the database password)")
    return str(password)


def wait_until(
    ctx: Context, ready: Callable[[], bool], what: str, timeout: float, poll: float
) -> None:
    waited = 0.0
    while not ready():
        if waited >= timeout:
            raise AgentError(f"{what} did not come up within {int(timeout)} s")
        ctx.sleep(poll)
        waited += poll


def accounting_db(ctx: Context, timeout: float = 120.0, poll: float = 2.0) -> dict[str, Any]:
    """Set up the database and slurmdbd (see the module's docstring)."""
    try:
        config = accounting_config(ctx)
    except AccountingOff as off:
        log(f"accounting-db: accounting is off ({off}): nothing to do")
        return {"enabled": False}
    db = config.database
    if db is None:
        raise AgentError(f"{ACCOUNTING_CONFIG_PATH} names no database: run sync-config")
    missing = missing_commands(db)
    if missing:
        raise AgentError(
            f"{', '.join(missing)} not found: the head image must hold them for the "
            f"{db.type.value} accounting database ({IMAGE_CONTRACT_DOC})"
        )
    password = database_password(ctx, db.password_secret)
    result: dict[str, Any] = {"enabled": True, "database": db.type.value}
    if db.local:
        result["initialized"] = local_database(ctx, db, password, timeout, poll)
    # The rendered file names the host, unless it is known only at deploy time (rds).
    host = None
    if db.host is None:
        host = ctx.wait_parameter(DeployParameter.ACCOUNTING_DB_HOST)
    rendered = system.read(ctx, SLURMDBD_CONF_RENDERED_PATH)
    if rendered is None:
        raise AgentError(f"{SLURMDBD_CONF_RENDERED_PATH} is missing: run sync-config first")
    text = slurmdbd_conf(rendered, password, host)
    live = ctx.path(SLURMDBD_CONF_PATH)
    changed = not live.exists() or live.read_text() != text
    if changed:
        write_atomic(live, text.encode(), 0o600, owner=ctx.owner(SLURM_USER))
    ctx.sh("systemctl", "enable", SLURMDBD_UNIT, check=False)
    ctx.sh("systemctl", "restart" if changed else "start", SLURMDBD_UNIT)
    port = config.slurmdbd_port
    if on_backup(ctx):
        # DbdBackupHost: standing by for the head's slurmdbd, its port closed until it serves.
        result["standby"] = True
        running = ctx.sh("systemctl", "is-active", "--quiet", SLURMDBD_UNIT, check=False)
        if running.returncode != 0:
            raise AgentError(f"{SLURMDBD_UNIT} is not running (see its log)")
    else:
        wait_until(ctx, lambda: port_open(port), "slurmdbd's port", timeout, poll)
    result["slurmdbd_conf_changed"] = changed
    return result


def local_database(
    ctx: Context, db: AccountingDatabase, password: str, timeout: float, poll: float
) -> bool:
    """The local MariaDB on its data directory, with slurmdbd's user. True when the data
    directory was made now (a first boot); a replacement head finds it on the volume."""
    initialized = initialize_data_dir(ctx)
    wanted = str(ctx.path(MARIADB_DATA_DIR))
    ctx.sh("systemctl", "enable", MARIADB_UNIT, check=False)
    if server_data_dir(ctx) != wanted:
        # Still on the image's /var/lib/mysql (or down): restart onto the state volume.
        ctx.sh("systemctl", "restart", MARIADB_UNIT)
    wait_until(
        ctx, lambda: server_data_dir(ctx) == wanted, "MariaDB on its data directory", timeout, poll
    )
    run_sql(ctx, database_user_sql(db.user, password, db.name))
    return initialized


def initialize_data_dir(ctx: Context) -> bool:
    """mariadb-install-db into the data directory unless it already holds a database."""
    path = ctx.path(MARIADB_DATA_DIR)
    if (path / "mysql").is_dir():
        return False
    path.mkdir(parents=True, exist_ok=True)
    uid, gid = ctx.owner(MYSQL_USER)
    os.chown(path, uid, gid)
    os.chmod(path, 0o700)
    ctx.ok(*install_db_command(str(path)))
    log(f"accounting-db: made the database in {MARIADB_DATA_DIR}")
    return True


def server_data_dir(ctx: Context) -> str | None:
    """The running server's data directory, None when it does not answer."""
    result = ctx.feed(client_command(str(ctx.path(MARIADB_SOCKET))), "SELECT @@datadir;\n")
    if result.returncode != 0:
        return None
    return str(Path(result.stdout.strip())) if result.stdout.strip() else None


def run_sql(ctx: Context, statements: str) -> None:
    result = ctx.feed(client_command(str(ctx.path(MARIADB_SOCKET))), statements)
    if result.returncode != 0:
        # The client echoes no statement on failure, only the server's error.
        raise AgentError(f"the database refused slurmdbd's user: {result.stderr.strip()}")
