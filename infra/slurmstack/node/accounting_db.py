"""accounting-db (head): the accounting database and slurmdbd, up before slurmctld needs them.

local database: MariaDB's data directory on the state volume, made once (a replacement head
finds it there), the server moved onto it, and slurmdbd's database user with the password from
Secrets Manager. external and rds: the server is someone else's; only slurmdbd is set up.
Then slurmdbd.conf: the rendered copy (no password) with StorageHost (rds: from its deploy
parameter) and StoragePass appended, 0600 and owned by SlurmUser as slurmdbd demands; slurmdbd
is restarted when the file changed, and waited for on its port. Idempotent: run at boot and by
the apply-config document before every `scontrol reconfigure`.

The password is read by root only (the instance role, behind the metadata firewall), passed to
the database client on its standard input, and never printed or put on a command line.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

from .base import AgentError, NodeBase, log, write_atomic

ACCOUNTING_CONFIG = "/etc/slurmstack/accounting.json"
# Where Debian's and Ubuntu's MariaDB puts its socket (50-server.cnf); slurmdbd's "localhost"
# reaches it there too (MariaDB's client library default).
MARIADB_SOCKET = "/run/mysqld/mysqld.sock"
# What the head image must hold for a local database (slurmstack.accounting.HEAD_PACKAGES).
LOCAL_DATABASE_COMMANDS = ("mariadb-install-db", "mariadb", "slurmdbd")
HEAD_PACKAGES = "slurmdbd mariadb-server"
MYSQL_USER = "mysql"
SLURM_USER = "slurm"
# Characters slurmdbd.conf can carry in a value without quoting: printable ASCII but blanks and
# quotes ('#' and '\\' are escaped with a backslash, which Slurm's parser strips).
_UNQUOTABLE = frozenset(" \t\"'")


class AccountingOff(Exception):
    """accounting.json says accounting is off (or is missing: an older configuration)."""


def run_sql(cmd: list[str], sql: str) -> subprocess.CompletedProcess[str]:
    """A database client command with ``sql`` on its standard input (never on its command
    line, where any user could read it in the process list)."""
    return subprocess.run(cmd, input=sql, text=True, capture_output=True, check=False)


def sql_string(value: str) -> str:
    """A single-quoted SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_identifier(value: str) -> str:
    return "`" + value.replace("`", "``") + "`"


def database_user_sql(user: str, password: str, database: str) -> str:
    """slurmdbd's user on the local server, with this password (set again on every run, so a
    rotated secret takes effect) and every privilege on its database, which slurmdbd creates."""
    account = f"{sql_string(user)}@'localhost'"
    return (
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


def client_command(socket_path: str = MARIADB_SOCKET) -> list[str]:
    return ["mariadb", f"--socket={socket_path}", "--user=root", "--batch", "--skip-column-names"]


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


class AccountingDb(NodeBase):
    # Injectable for tests: the SQL runner and the socket of the local server.
    sql_runner: Any = staticmethod(run_sql)
    mariadb_socket: str = MARIADB_SOCKET

    def accounting_config(self) -> dict[str, Any]:
        """accounting.json; AccountingOff when it says accounting is off (or is missing)."""
        path = self.path(ACCOUNTING_CONFIG)
        if not path.exists():
            raise AccountingOff(f"{ACCOUNTING_CONFIG} is missing")
        config: dict[str, Any] = json.loads(path.read_text())
        if not config.get("enabled"):
            raise AccountingOff("slurm.accounting.enabled is false")
        return config

    def database_password(self, secret: str) -> str:
        value = self.client("secretsmanager").get_secret_value(SecretId=secret)
        password = value.get("SecretString")
        if not password:
            raise AgentError(f"secret {secret} holds no SecretString (the database password)")
        return str(password)

    def accounting_db(self, timeout: float = 120.0, poll: float = 2.0) -> dict[str, Any]:
        """Set up the database and slurmdbd (see the module's docstring)."""
        try:
            config = self.accounting_config()
        except AccountingOff as off:
            log(f"accounting-db: accounting is off ({off}): nothing to do")
            return {"enabled": False}
        db = config["database"]
        if db["type"] == "local":
            missing = [c for c in LOCAL_DATABASE_COMMANDS if shutil.which(c) is None]
            if missing:
                raise AgentError(
                    f"{', '.join(missing)} not found: the head image must hold {HEAD_PACKAGES} "
                    "for the local accounting database"
                )
        elif shutil.which("slurmdbd") is None:
            raise AgentError("slurmdbd not found: the head image must hold the slurmdbd package")
        password = self.database_password(str(db["password_secret"]))
        result: dict[str, Any] = {"enabled": True, "database": db["type"]}
        if db["type"] == "local":
            result["initialized"] = self.local_database(db, password, timeout, poll)
        # The rendered file names the host, unless it is known only at deploy time (rds).
        host = None
        if db.get("host") is None:
            host = self.wait_parameter(str(db["host_parameter"]))
        slurmdbd = config["slurmdbd"]
        rendered = self._read(str(slurmdbd["rendered_conf"]))
        if rendered is None:
            raise AgentError(f"{slurmdbd['rendered_conf']} is missing: run sync-config first")
        text = slurmdbd_conf(rendered, password, host)
        live = self.path(str(slurmdbd["conf"]))
        changed = not live.exists() or live.read_text() != text
        if changed:
            write_atomic(live, text.encode(), 0o600, owner=self.owner(SLURM_USER))  # type: ignore[operator]
        self.sh("systemctl", "enable", "slurmdbd.service", check=False)
        self.sh("systemctl", "restart" if changed else "start", "slurmdbd.service")
        self._wait(lambda: port_open(int(slurmdbd["port"])), "slurmdbd's port", timeout, poll)
        result["slurmdbd_conf_changed"] = changed
        return result

    def local_database(
        self, db: dict[str, Any], password: str, timeout: float, poll: float
    ) -> bool:
        """The local MariaDB on its data directory, with slurmdbd's user. True when the data
        directory was made now (a first boot); a replacement head finds it on the volume."""
        data_dir = str(db["data_dir"])
        initialized = self.initialize_data_dir(data_dir)
        wanted = str(self.path(data_dir))
        self.sh("systemctl", "enable", "mariadb.service", check=False)
        if self.server_data_dir() != wanted:
            # Still on the image's /var/lib/mysql (or down): restart onto the state volume.
            self.sh("systemctl", "restart", "mariadb.service")
        self._wait(
            lambda: self.server_data_dir() == wanted, "MariaDB on its data directory", timeout, poll
        )
        self.sql(database_user_sql(str(db["user"]), password, str(db["name"])))
        return initialized

    def initialize_data_dir(self, data_dir: str) -> bool:
        """mariadb-install-db into ``data_dir`` unless it already holds a database."""
        path = self.path(data_dir)
        if (path / "mysql").is_dir():
            return False
        path.mkdir(parents=True, exist_ok=True)
        uid, gid = self.owner(MYSQL_USER)  # type: ignore[operator]
        os.chown(path, uid, gid)
        os.chmod(path, 0o700)
        self._ok(*install_db_command(str(path)))
        log(f"accounting-db: made the database in {data_dir}")
        return True

    def server_data_dir(self) -> str | None:
        """The running server's data directory, None when it does not answer."""
        result = self.sql_runner(client_command(self.mariadb_socket), "SELECT @@datadir;\n")
        if result.returncode != 0:
            return None
        return str(Path(result.stdout.strip())) if result.stdout.strip() else None

    def sql(self, statements: str) -> None:
        result = self.sql_runner(client_command(self.mariadb_socket), statements)
        if result.returncode != 0:
            # The client echoes no statement on failure, only the server's error.
            raise AgentError(f"the database refused slurmdbd's user: {result.stderr.strip()}")

    def _wait(self, ready: Any, what: str, timeout: float, poll: float) -> None:
        waited = 0.0
        while not ready():
            if waited >= timeout:
                raise AgentError(f"{what} did not come up within {int(timeout)} s")
            self.sleep(poll)  # type: ignore[operator]
            waited += poll
