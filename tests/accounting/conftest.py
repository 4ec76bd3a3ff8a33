"""Accounting on loopback: Debian's MariaDB and slurmdbd, slurmctld and one dynamic GPU node,
run with the head node's rendered configuration and the node agent's own accounting steps
(`accounting-db`, `accounting-apply`, `usage`), as root, in a directory of the test's own.

Everything that differs from a head node is listed here, in one place:

ADAPTED (a rendered key, the test's value; every other line is used as rendered):
  slurm.conf      tests/slurm's substitutions (ports, paths, process tracking), and
                  AccountingStorageHost=localhost, AccountingStoragePort=<a free port>,
                  StateSaveLocation=<the stand-in state volume>/state, and
                  JobAcctGatherType=jobacct_gather/linux (this host delegates no cgroup tree)
  slurmdbd.conf   DbdHost=localhost, DbdPort=<that port>, PidFile and LogFile in the test's dir
  MariaDB's cnf   datadir=<the stand-in state volume>/mariadb, innodb_buffer_pool_size=128M
                  (a shared 2-core machine, not a head node's 4 GiB)
  accounting.json slurmdbd_port=<that port>
ADDED (test-only lines):
  slurm.conf      AccountingStoragePass=<the test's munge socket> (slurmctld, sacct and sacctmgr
                  reach slurmdbd through the test's munged, not /run/munge)
  slurmdbd.conf   AuthInfo=socket=<the test's munge socket>
  MariaDB's cnf   socket (<root>/run/mysqld/mysqld.sock, where the agent looks below its
                  root), pid-file and log-error in the test's dir; user=mysql
STAND-INS:
  STATE_VOLUME    <root>/var/spool/slurmctld, a directory: what survives a head replacement
  systemctl       starts and stops the test's mariadbd and slurmdbd (by pid)
  Secrets Manager moto, holding the database password the stack would have generated
  MYSQL_UNIX_PORT slurmdbd's "localhost" is the test's MariaDB socket, not /run/mysqld
"""

from __future__ import annotations

import os
import shutil
import signal
import string
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from slurm.conftest import (
    Cluster,
    make_devices,
    replace_keys,
    require_binaries,
    reserve_port,
    run,
    wait_for,
    write_config,
)
from slurm.slurm_root import localize
from slurmstack import contract
from slurmstack.contract import STATE_VOLUME_MOUNT, TASK_PROLOG_PATH
from slurmstack.node.accounting import apply, database
from slurmstack.node.context import Context
from slurmstack.plan import ClusterPlan, build_plan
from slurmstack.render import SLURMD_UNIT_PATH, head_files, pool_files, user_data
from slurmstack.validate import validate_object
from support.examples import REPO

REGION = "us-east-1"
ACCOUNTING_BINARIES = ("mariadbd", "mariadb-install-db", "mariadb", "slurmdbd", "sacct", "sacctmgr")
POOL = "dev"  # g6e.12xlarge: 4 L40S, 48 vCPUs, shared (not exclusive) nodes
NODE_ADDRESS = "10.42.7.23"
PRICE = 8.0  # USD per g6e.12xlarge-hour in the test's definition: 2 USD per GPU-hour
BUFFER_POOL = "128M"


def require_accounting_binaries() -> None:
    require_binaries()
    missing = [b for b in ACCOUNTING_BINARIES if shutil.which(b) is None]
    if missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {missing} are not installed (apt: mariadb-server slurmdbd)")
        pytest.skip(f"not installed: {missing}")


def definition(accounting: dict[str, Any]) -> dict[str, Any]:
    """The p5 example with the test's accounting section and a round price for its dev pool."""
    data = yaml.safe_load((REPO / "examples" / "p5-training.yaml").read_text())
    data["slurm"]["accounting"] = accounting
    data["cost"] = {"instance_hourly_usd": {"g6e.12xlarge": PRICE}}
    return data


def plan_of(data: dict[str, Any]) -> ClusterPlan:
    result = validate_object(data, source="test")
    assert result.spec is not None, [f.line() for f in result.findings]
    return build_plan(result.spec)


@dataclass
class AccountingHead:
    """The head node's accounting on loopback (see the module's docstring)."""

    cluster: Cluster
    session: Any
    password: str
    daemons: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    plan: ClusterPlan | None = None

    def __post_init__(self) -> None:
        # slurmdbd's port, held with the cluster's two until the cluster stops.
        reservation = reserve_port()
        self.cluster.reservations.append(reservation)
        self.dbd_port = reservation.port

    @property
    def root(self) -> Path:
        return self.cluster.root

    @property
    def state_volume(self) -> Path:
        return self.root / STATE_VOLUME_MOUNT.lstrip("/")

    @property
    def mysql_socket(self) -> Path:
        """Where the agent's database client looks (below its root)."""
        return self.node_path(contract.MARIADB_SOCKET)

    @property
    def mysql_run(self) -> Path:
        return self.mysql_socket.parent

    def node_path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    # --- the agent, with systemctl as a stand-in ------------------------------------

    def agent(self) -> Context:
        return Context(root=self.root, session=self.session, run=self.run)

    def run(self, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        if cmd[0] == "systemctl":
            return self.systemctl(*cmd[1:])
        result = subprocess.run(
            localize(cmd), env=self.cluster.env(), capture_output=True, text=True, timeout=120
        )
        if check and result.returncode != 0:
            raise subprocess.CalledProcessError(
                result.returncode, cmd, result.stdout, result.stderr
            )
        return result

    def systemctl(self, verb: str, unit: str) -> subprocess.CompletedProcess[str]:
        starters = {
            contract.MARIADB_UNIT: self.start_mariadb,
            contract.SLURMDBD_UNIT: self.start_slurmdbd,
        }
        assert unit in starters, f"systemctl {verb} {unit}: not a unit this stand-in runs"
        name = unit.removesuffix(".service")
        if verb == "restart":
            self.stop(name)
        if verb in ("start", "restart") and name not in self.daemons:
            starters[unit]()
        return subprocess.CompletedProcess(["systemctl", verb, unit], 0, "", "")

    # --- daemons --------------------------------------------------------------------

    def spawn(self, name: str, cmd: list[str], env: dict[str, str]) -> None:
        out = open(self.root / "log" / f"{name}.out", "ab")  # noqa: SIM115 - closed with it
        proc = subprocess.Popen(localize(cmd), stdout=out, stderr=subprocess.STDOUT, env=env)
        self.daemons[name] = proc
        self.cluster.procs.append(proc)

    def start_mariadb(self) -> None:
        self.mysql_socket.unlink(missing_ok=True)  # left by a killed server, never by a clean one
        cnf = self.node_path(contract.MARIADB_CONF_PATH)
        self.spawn("mariadb", ["mariadbd", f"--defaults-file={cnf}"], dict(os.environ))

    def start_slurmdbd(self) -> None:
        # slurmdbd reads slurmdbd.conf beside the slurm.conf that SLURM_CONF names.
        conf_dir = self.node_path(contract.SLURMDBD_CONF_PATH).parent
        env = {**self.cluster.env(), "SLURM_CONF": str(conf_dir / "slurm.conf")}
        env["MYSQL_UNIX_PORT"] = str(self.mysql_socket)
        self.spawn("slurmdbd", ["slurmdbd", "-D"], env)

    def stop(self, name: str) -> None:
        proc = self.daemons.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def stop_all(self) -> None:
        """Every daemon, by its pid; the ports stay reserved for the head's next boot."""
        for proc in reversed(self.cluster.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self.cluster.procs):
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.cluster.procs.clear()
        self.daemons.clear()

    # --- the rendered files, adapted ------------------------------------------------

    def install(self, plan: ClusterPlan) -> None:
        """What sync-config would write on the head node, with the adaptations above."""
        self.plan = plan
        files = head_files(plan)
        socket = self.cluster.munge_socket
        overrides = {
            "AccountingStorageHost": "localhost",
            "AccountingStoragePort": str(self.dbd_port),
            "StateSaveLocation": str(self.state_volume / "state"),
            "JobAcctGatherType": "jobacct_gather/linux",
        }
        prolog = pool_files(plan, plan.pool(POOL))[TASK_PROLOG_PATH]
        write_config(self.cluster, files, prolog, overrides, accounting=True)
        with self.cluster.conf.open("a") as conf:
            conf.write(f"AccountingStoragePass={socket}\n")
        conf_dir = self.node_path(contract.SLURMDBD_CONF_PATH).parent
        conf_dir.mkdir(parents=True, exist_ok=True)
        link = conf_dir / "slurm.conf"
        if not link.exists():
            link.symlink_to(self.cluster.conf)
        dbd = replace_keys(
            files[contract.SLURMDBD_CONF_RENDERED_PATH],
            {
                "DbdHost": "localhost",
                "DbdPort": str(self.dbd_port),
                "PidFile": str(self.root / "run" / "slurmdbd.pid"),
                "LogFile": str(self.root / "log" / "slurmdbd.log"),
            },
        )
        self.write(contract.SLURMDBD_CONF_RENDERED_PATH, dbd + f"AuthInfo=socket={socket}\n")
        cnf = replace_keys(
            files[contract.MARIADB_CONF_PATH],
            {
                "datadir": str(self.node_path(contract.MARIADB_DATA_DIR)),
                "innodb_buffer_pool_size": BUFFER_POOL,
            },
            sep=" = ",
        )
        cnf += (
            f"socket = {self.mysql_socket}\npid-file = {self.mysql_run / 'mariadb.pid'}\n"
            f"log-error = {self.root / 'log' / 'mariadb.err'}\nuser = mysql\n"
        )
        self.write(contract.MARIADB_CONF_PATH, cnf)
        # What the head's cloud-init document writes before the agent runs.
        cloud_init = yaml.safe_load(user_data(plan, "head"))
        path = contract.BOOTSTRAP_ENV_PATH
        (env,) = [f for f in cloud_init["write_files"] if f["path"] == path]
        self.write(path, env["content"])
        config = contract.load_document(
            contract.AccountingConfig, files[contract.ACCOUNTING_CONFIG_PATH]
        )
        config = replace(config, slurmdbd_port=self.dbd_port)
        self.write(contract.ACCOUNTING_CONFIG_PATH, contract.dump_document(config))

    def write(self, node_path: str, text: str) -> None:
        path = self.node_path(node_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    # --- booting, as the head's cloud-init does -------------------------------------

    def boot(self, plan: ClusterPlan) -> dict[str, Any]:
        """munge, accounting-db, slurmctld, accounting-apply, in the order of the head's
        cloud-init document; returns both agent steps' results."""
        self.install(plan)
        self.cluster.start_munged()
        db = database.accounting_db(self.agent(), timeout=90, poll=0.5)
        self.cluster.start_slurmctld()
        applied = apply.accounting_apply(self.agent())
        assert applied["failed"] == {}, applied
        return {"db": db, "apply": applied}

    def start_node(self) -> str:
        """One dynamic node of the dev pool, as its rendered unit starts slurmd."""
        from slurm.test_dynamic_node import node_fields, slurmd_command

        assert self.plan is not None
        pool = self.plan.pool(POOL)
        assert pool.gpu is not None
        make_devices(self.cluster, "nvidia", pool.gpu.count)
        name = contract.node_name(contract.node_name_prefix(pool.name), NODE_ADDRESS)
        unit = pool_files(self.plan, pool)[SLURMD_UNIT_PATH]
        # -b: report now as the boot time (this host booted long ago).
        self.cluster.start_slurmd([*slurmd_command(unit, self.cluster, name), "-b"], name)
        wait_for(
            lambda: node_fields(self.cluster, name).get("State", "").startswith("IDLE"),
            f"node {name} idle",
            self.cluster,
        )
        return name

    def sacctmgr(self, *args: str) -> str:
        return run(["sacctmgr", "-n", "-P", *args], self.cluster).stdout

    def srun(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        # The node must be free first: a job that waits for resources gets its allocation
        # later, in a message slurmctld (22.05) restricts to the job's user, which srun --uid
        # (still root then) cannot decode; a GPU pool's Epilog keeps the last job COMPLETING
        # for a moment.
        wait_for(
            lambda: not run(["squeue", "-h"], self.cluster).stdout.strip(),
            "no job left in the queue",
            self.cluster,
        )
        cmd = ["srun", "-p", POOL, "-t", "1", "--chdir=/tmp", *args]
        return run(cmd, self.cluster, check=check, timeout=60)

    def sacct_jobs(self, *fields: str) -> list[dict[str, str]]:
        text = run(
            ["sacct", "-a", "-X", "-n", "-P", "-S", "now-1days", f"--format={','.join(fields)}"],
            self.cluster,
        ).stdout
        return [dict(zip(fields, line.split("|"), strict=True)) for line in text.splitlines()]


# Jobs run as system users every Debian has (nobody, daemon, bin); the others are names only
# (sacctmgr takes users without a login here). games is in no account: enforcement refuses it.
ACCOUNTING: dict[str, Any] = {
    "accounts": [
        {
            "name": "team-a",
            "description": "Team A",
            "fairshare": 60,
            "users": ["nobody", "alice"],
            "qos": ["normal", "big"],
        },
        {"name": "team-b", "fairshare": 30, "users": ["daemon", "bob"]},
        {"name": "team-c", "parent": "team-a", "users": ["bin", "alice"]},
        {"name": "team-d", "fairshare": 10, "users": ["dave"], "grp_tres": {"gres/gpu": 4}},
    ],
    "qos": [
        {
            "name": "big",
            "priority": 100,
            "max_wall_minutes": 120,
            "max_tres_per_user": {"gres/gpu": 4, "gres/gpu:l40s": 4},
        },
        {"name": "bulk", "priority": 5, "grp_tres": {"node": 1}},
    ],
}


@pytest.fixture(scope="module")
def head() -> Iterator[AccountingHead]:
    """One head (booted once per module: tests run in order and leave it running)."""
    require_accounting_binaries()
    root = Path(tempfile.mkdtemp(prefix="slurmstack-accounting-"))
    cluster = Cluster(root)
    # mariadbd runs as mysql: its socket and pid live in a directory of its own, where the
    # agent looks for the socket (below its root).
    sockets = root / contract.MARIADB_SOCKET.lstrip("/")
    sockets.parent.mkdir(parents=True)
    shutil.chown(sockets.parent, "mysql", "mysql")
    # The cluster's commands get its own TMPDIR (tests/slurm: PMIx's); mariadb-install-db,
    # run by the agent as mysql, writes its temporary files there too: sticky, like /tmp.
    (root / "pmix").chmod(0o1777)
    alphabet = string.ascii_letters + string.digits
    password = "".join(alphabet[b % len(alphabet)] for b in os.urandom(32))
    try:
        with mock_aws():
            session = boto3.session.Session(region_name=REGION)
            plan = plan_of(definition(ACCOUNTING))
            assert plan.name == "llm-train"
            session.client("secretsmanager").create_secret(
                Name=contract.accounting_password_secret_name(plan.name), SecretString=password
            )
            head = AccountingHead(cluster, session, password)
            state = head.state_volume / "state"
            state.mkdir(parents=True)
            shutil.chown(state, "slurm", "slurm")
            try:
                head.boot(plan)
                head.start_node()
                yield head
            finally:
                head.cluster.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def wait_until(predicate: Any, what: str, head: AccountingHead, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}\n{head.cluster.logs()}")
