"""Stand-in "external-database": the MySQL-compatible server a definition with
`slurm.accounting.database.type: external` names, which its owner runs (on AWS: RDS, Aurora or
their own). Here: the host's MariaDB server in a namespace of its own on the fabric, at the
address the definition gives, with slurmdbd's user and the password in the Secrets Manager
secret the definition names (made in moto before the controllers boot, as the owner makes it).

Both controllers' slurmdbd connect to it over the fabric (a backup controller needs a database
both reach: checks `backup-needs-a-shared-database`). What is not real: the server is Debian's
MariaDB without TLS or a network of its own (RDS's), and its data lives in the run's directory.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path

from slurmstack.plan import ClusterPlan
from slurmstack.plan.accounting import accounting_plan

from .aws import MotoServer
from .netns import Fabric

SERVER = "mariadbd"
START_SECONDS = 60.0
# A shared 2-core machine: InnoDB's buffer pool at MariaDB's smallest useful size.
BUFFER_POOL = "64M"


def wanted(plan: ClusterPlan, fabric: Fabric) -> bool:
    """Whether the definition names an external database this stand-in can be: one whose host
    is an address in the virtual cluster's subnet."""
    accounting = accounting_plan(plan)
    if accounting is None or accounting.database.type.value != "external":
        return False
    try:
        return ipaddress.IPv4Address(accounting.database.host or "") in fabric.subnet
    except ValueError:
        return False


class ExternalDatabase:
    """The server, started by ``serve`` and stopped by ``close`` (by its pid)."""

    def __init__(self, plan: ClusterPlan, directory: Path) -> None:
        accounting = accounting_plan(plan)
        assert accounting is not None and accounting.database.host is not None
        self.database = accounting.database
        self.directory = directory
        self.password = secrets.token_urlsafe(24)
        self.namespace = ""
        self._server: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.directory / "mysqld.sock"

    def serve(self, fabric: Fabric, aws: MotoServer) -> None:
        data = self.directory / "data"
        data.mkdir(parents=True)
        # The server runs as mysql: it must pass through the run's directory (made 0700).
        self.directory.parent.chmod(0o711)
        shutil.chown(self.directory, "mysql", "mysql")
        shutil.chown(data, "mysql", "mysql")
        subprocess.run(
            ["mariadb-install-db", "--no-defaults", "--user=mysql", f"--datadir={data}",
             "--auth-root-authentication-method=socket", "--skip-test-db"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        host = str(self.database.host)
        self.namespace = fabric.add_node("database", host)
        log = open(self.directory / "server.log", "ab")  # noqa: SIM115 - the server's
        self._server = subprocess.Popen(
            ["ip", "netns", "exec", self.namespace, SERVER, "--no-defaults", "--user=mysql",
             f"--datadir={data}", f"--socket={self.socket}",
             f"--pid-file={self.directory / 'mysqld.pid'}", f"--bind-address={host}",
             f"--port={self.database.port}", f"--innodb-buffer-pool-size={BUFFER_POOL}",
             "--skip-log-bin", "--skip-name-resolve"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + START_SECONDS
        while self.sql("SELECT 1", check=False).returncode != 0:
            if self._server.poll() is not None or time.monotonic() > deadline:
                tail = (self.directory / "server.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the external database stand-in did not start:\n{tail}")
            time.sleep(0.5)
        user, name = self.database.user, self.database.name
        self.sql(
            f"CREATE DATABASE IF NOT EXISTS `{name}`; "
            f"CREATE USER '{user}'@'%' IDENTIFIED BY '{self.password}'; "
            f"GRANT ALL ON `{name}`.* TO '{user}'@'%';"
        )
        # The owner's secret, which the head's role reads (moto enforces no policy here).
        aws.client("secretsmanager").create_secret(
            Name=self.database.password_secret, SecretString=self.password
        )

    def sql(self, statement: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["mariadb", "--no-defaults", f"--socket={self.socket}", "--batch", "-e", statement],
            check=check, capture_output=True, text=True, timeout=30,
        )  # fmt: skip

    def running(self) -> bool:
        return self._server is not None and self._server.poll() is None

    def close(self) -> None:
        if self._server is None:
            return
        if self._server.poll() is None:
            os.killpg(self._server.pid, 15)
            try:
                self._server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self._server.pid, 9)
                self._server.wait(timeout=10)
