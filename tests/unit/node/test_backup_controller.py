"""The node side of a backup controller (head_node.backup): which controller an instance of the
head's document is, both controllers in every node's /etc/hosts and slurmd's --conf-server,
Slurm's state on the shared EFS, and the head's once-per-cluster loops run only where Slurm's
heartbeat says control is."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from slurmstack import contract
from slurmstack.contract import (
    ACCOUNTING_CONFIG_PATH,
    HEARTBEAT_PATH,
    NODE_CONFIG_PATH,
    SLURMCTLD_TIMEOUT_WITH_BACKUP_SECONDS,
    SLURMDBD_CONF_RENDERED_PATH,
    AccountingConfig,
    AccountingDatabase,
    DatabaseType,
    DeployParameter,
    dump_document,
)
from slurmstack.node import active, cli
from slurmstack.node.accounting.database import accounting_db
from slurmstack.node.boot import handback, params, state_volume
from slurmstack.node.context import AgentError, Context
from slurmstack.render import SLURMD_UNIT_PATH, pool_files
from slurmstack.render.node import node_config
from slurmstack.render.slurm import slurmctld_dropin, slurmd_elastic_dropin
from support.node import PLAN as NO_BACKUP
from support.node import Runner, make_node
from support.stack import plan_of, small_cluster

HEAD, BACKUP, WORKER = "10.42.0.10", "10.42.0.11", "10.42.7.19"
NOW = 1_800_000_000.0


def backup_plan() -> Any:
    definition = small_cluster()
    definition["name"] = NO_BACKUP.name
    definition["head_node"]["backup"] = True
    definition["slurm"] = {"accounting": {"database": {"type": "rds"}}}
    return plan_of(definition)


PLAN = backup_plan()


def controller(
    tmp_path: Path,
    aws: Any,
    address: str,
    run: Runner | None = None,
    clock: list[float] | None = None,
) -> Context:
    """An instance booting the head's document at ``address``, the parameters published;
    ``clock``: its time, [NOW] unless given."""
    now = clock or [NOW]
    node = make_node(
        tmp_path,
        aws,
        "head",
        run=run or Runner(),
        imds={"local-ipv4": address, "instance-id": "i-0123456789abcdef0"}.__getitem__,
    )
    config = tmp_path / NODE_CONFIG_PATH.lstrip("/")
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(dump_document(node_config(PLAN, None)))
    ssm = aws.client("ssm")
    for key, value in {
        DeployParameter.HEAD_ADDRESS: HEAD,
        DeployParameter.BACKUP_ADDRESS: BACKUP,
        DeployParameter.STATE_EFS_ID: "fs-0fedcba9876543210",
    }.items():
        ssm.put_parameter(Name=PLAN.parameter(key), Value=value, Type="String", Overwrite=True)
    return Context(
        root=tmp_path,
        session=aws,
        imds=node.imds,
        run=node.run,
        sleep=lambda _s: None,
        owner=node.owner,
        clock=lambda: now[0],
    )


@pytest.mark.parametrize(
    ("address", "name"),
    [(HEAD, f"{PLAN.name}-head"), (BACKUP, f"{PLAN.name}-backup")],
    ids=["head", "backup"],
)
def test_the_instance_at_the_backup_address_is_the_backup(
    aws: Any, tmp_path: Path, address: str, name: str
) -> None:
    run = Runner()
    env = params.params(controller(tmp_path, aws, address, run), poll=0)
    assert env.node_name == name and ["hostnamectl", "set-hostname", name] in run.calls
    assert (env.head_address, env.backup_address) == (HEAD, BACKUP)
    hosts = (tmp_path / "etc/hosts").read_text()
    assert f"{HEAD} {PLAN.name}-head" in hosts and f"{BACKUP} {PLAN.name}-backup" in hosts


def test_a_worker_lists_both_controllers(aws: Any, tmp_path: Path) -> None:
    clock = [NOW]
    node = controller(tmp_path, aws, WORKER, clock=clock)
    config = node_config(PLAN, PLAN.pools[0])
    (tmp_path / NODE_CONFIG_PATH.lstrip("/")).write_text(dump_document(config))
    env = params.params(node, poll=0)
    assert (env.head_address, env.backup_address) == (HEAD, BACKUP)
    written = contract.parse_env((tmp_path / "etc/slurmstack/node.env").read_text())
    assert written["SLURMSTACK_BACKUP_ADDRESS"] == BACKUP
    hosts = (tmp_path / "etc/hosts").read_text()
    assert f"{BACKUP} {PLAN.name}-backup" in hosts and f"{WORKER} {env.node_name}" in hosts
    # A replaced backup (its interface replaced too) is found before the next slurmd start.
    aws.client("ssm").put_parameter(
        Name=PLAN.parameter(DeployParameter.BACKUP_ADDRESS),
        Value="10.42.0.12",
        Type="String",
        Overwrite=True,
    )
    clock[0] += params.HEAD_ADDRESS_FRESH_SECONDS + 1  # past the boot's reading
    assert params.head_address(node) == HEAD
    hosts = (tmp_path / "etc/hosts").read_text()
    assert f"10.42.0.12 {PLAN.name}-backup" in hosts and BACKUP not in hosts
    assert node.node_env().backup_address == "10.42.0.12"


def test_slurmd_fetches_its_configuration_from_either_controller() -> None:
    unit = pool_files(PLAN, PLAN.pools[0])[SLURMD_UNIT_PATH]
    assert "--conf-server ${SLURMSTACK_HEAD_ADDRESS}:6817,${SLURMSTACK_BACKUP_ADDRESS}:6817" in unit
    plain = pool_files(NO_BACKUP, NO_BACKUP.pools[0])[SLURMD_UNIT_PATH]
    assert "--conf-server ${SLURMSTACK_HEAD_ADDRESS}:6817 " in plain and "BACKUP" not in plain


def test_an_elastic_nodes_slurmd_fetches_from_either_controller() -> None:
    """The elastic nodes' drop-in replaces slurmd's command line: it must list the backup too
    (the virtual cluster found an elastic node resumed by the backup waiting on the head)."""
    definition = small_cluster()
    definition["pools"][0]["max_count"] = definition["pools"][0]["count"] + 2
    definition["slurm"] = {"accounting": {"enabled": False}}
    for backup in (False, True):
        definition["head_node"]["backup"] = backup
        plan = plan_of(definition)
        dropin = slurmd_elastic_dropin(plan, plan.pools[0])
        assert dropin is not None
        (start,) = [x for x in dropin.splitlines() if x.startswith("ExecStart=/")]
        servers = "${SLURMSTACK_HEAD_ADDRESS}:6817"
        servers += ",${SLURMSTACK_BACKUP_ADDRESS}:6817" if backup else ""
        assert f"--conf-server {servers} -N " in start, start


def test_state_is_mounted_from_the_shared_efs(aws: Any, tmp_path: Path) -> None:
    run = Runner()
    node = controller(tmp_path, aws, BACKUP, run)
    with pytest.raises(AgentError, match=r"mount\.efs is missing"):
        state_volume.state_volume(node, timeout=0)
    helper = tmp_path / "usr/sbin/mount.efs"
    helper.parent.mkdir(parents=True, exist_ok=True)
    helper.write_text("")
    assert state_volume.state_volume(node, timeout=0) == "fs-0fedcba9876543210:/"
    fstab = (tmp_path / "etc/fstab").read_text()
    # Not nofail: slurmctld's unit requires the mount, never an empty local directory.
    assert "fs-0fedcba9876543210:/ /var/spool/slurmctld efs tls,_netdev" in fstab
    assert "nofail" not in fstab
    assert ["mount", "/var/spool/slurmctld"] in run.calls
    assert (tmp_path / "var/spool/slurmctld/state").is_dir()
    assert not any(c[0] in {"mkfs.ext4", "blkid"} for c in run.calls)


def beat(tmp_path: Path, age: float, index: int) -> None:
    path = tmp_path / HEARTBEAT_PATH.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack(">QQ", int(NOW - age), index))


@pytest.mark.parametrize(
    ("heartbeat", "acts"),
    [
        (None, "head"),  # a first boot: as without a backup
        ((5, 0), "head"),
        ((5, 1), "backup"),  # the backup took control
        ((SLURMCTLD_TIMEOUT_WITH_BACKUP_SECONDS + 5, 1), "head"),  # its heartbeat went stale
    ],
    ids=["none", "head-fresh", "backup-fresh", "backup-stale"],
)
def test_exactly_one_controller_runs_the_once_per_cluster_loops(
    aws: Any, tmp_path: Path, heartbeat: tuple[float, int] | None, acts: str
) -> None:
    running = []
    for name, address in (("head", HEAD), ("backup", BACKUP)):
        root = tmp_path / name
        node = controller(root, aws, address)
        params.params(node, poll=0)
        if heartbeat is not None:
            beat(root, *heartbeat)
        if active.standby_reason(node) is None:
            running.append(name)
    assert running == [acts]


def test_the_controller_in_standby_skips_its_pass(aws: Any, tmp_path: Path, capsys: Any) -> None:
    run = Runner()
    node = controller(tmp_path, aws, BACKUP, run)
    params.params(node, poll=0)
    beat(tmp_path, 5, 0)
    calls = len(run.calls)
    assert cli.main(["--root", str(tmp_path), "control"], ctx=node) == 0
    assert run.calls[calls:] == []  # no scontrol, no AWS
    assert "control: not run here: the head acts" in capsys.readouterr().err


def test_without_a_backup_nothing_is_gated(aws: Any, tmp_path: Path) -> None:
    node = make_node(tmp_path, aws, "head")
    config = tmp_path / NODE_CONFIG_PATH.lstrip("/")
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(dump_document(node_config(NO_BACKUP, None)))
    beat(tmp_path, 5, 1)
    assert active.standby_reason(node) is None


def test_slurm_conf_names_both_controllers_and_both_slurmdbds() -> None:
    from slurmstack.contract import SLURM_CONF_PATH, SLURMDBD_CONF_RENDERED_PATH
    from slurmstack.render import head_files

    files = head_files(PLAN)
    conf = files[SLURM_CONF_PATH].splitlines()
    name = PLAN.name
    hosts = [line for line in conf if line.startswith("SlurmctldHost=")]
    assert hosts == [f"SlurmctldHost={name}-head", f"SlurmctldHost={name}-backup"]
    assert f"SlurmctldTimeout={SLURMCTLD_TIMEOUT_WITH_BACKUP_SECONDS}" in conf
    assert f"AccountingStorageBackupHost={name}-backup" in conf
    dbd = files[SLURMDBD_CONF_RENDERED_PATH].splitlines()
    assert f"DbdHost={name}-head" in dbd and f"DbdBackupHost={name}-backup" in dbd
    plain = head_files(NO_BACKUP)[SLURM_CONF_PATH]
    assert plain.count("SlurmctldHost=") == 1 and "SlurmctldTimeout" not in plain
    assert "BackupHost" not in plain


def test_nodes_registered_after_the_last_node_save_are_saved_for_the_backup(
    aws: Any, tmp_path: Path
) -> None:
    from slurmstack.node.controller.registrations import NODE_STATE_FILE, save_new_registrations
    from slurmstack.node.slurm import NodeRecord

    def node(name: str, started: str) -> NodeRecord:
        return NodeRecord.of({"NodeName": name, "State": "IDLE", "Weight": "7",
                              "SlurmdStartTime": started})  # fmt: skip

    run = Runner()
    ctx = controller(tmp_path, aws, HEAD, run)
    table = tmp_path / NODE_STATE_FILE.lstrip("/")
    table.parent.mkdir(parents=True, exist_ok=True)
    table.write_bytes(b"")
    saved = 1_800_000_000
    os.utime(table, (saved, saved))
    old = node("cpu-1", time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(saved - 60)))
    new = node("cpu-2", time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(saved + 60)))
    assert save_new_registrations(ctx, (old,)) == [] and run.calls == []
    assert save_new_registrations(ctx, (old, new)) == ["cpu-2"]
    # One update that changes nothing (its own weight): Slurm saves its node table after it.
    (call,) = run.calls
    assert call[-3:] == ["update", "nodename=cpu-2", "weight=7"]
    # Without a backup nothing is asked: the head alone reads its own state.
    plain = Runner()
    ctx = make_node(tmp_path / "plain", aws, "head", run=plain)
    config = tmp_path / "plain" / NODE_CONFIG_PATH.lstrip("/")
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(dump_document(node_config(NO_BACKUP, None)))
    assert save_new_registrations(ctx, (new,)) == [] and plain.calls == []


def test_sackd_fetches_from_either_controller_and_its_unit_keeps_its_lines() -> None:
    from slurmstack.render.people import login_files

    definition = small_cluster()
    definition["login_pools"] = [{"name": "login", "instance_type": "m7i.large", "count": 1}]
    for backup in (False, True):
        definition["head_node"]["backup"] = backup
        definition["slurm"] = {"accounting": {"enabled": False}}
        plan = plan_of(definition)
        unit = next(t for p, t in login_files(plan, plan.login_pools[0]).items() if "sackd" in p)
        (start,) = [x for x in unit.splitlines() if x.startswith("ExecStart=")]
        servers = "${SLURMSTACK_HEAD_ADDRESS}:6817"
        servers += ",${SLURMSTACK_BACKUP_ADDRESS}:6817" if backup else ""
        assert start.endswith(f"--conf-server {servers}"), start
        assert "\nExecReload=" in unit


class SlurmdbdUnit(Runner):
    """systemctl answering is-active for slurmdbd as ``running`` says."""

    def __init__(self, running: bool) -> None:
        super().__init__()
        self.running = running

    def __call__(self, cmd: list[str], check: bool = True):  # type: ignore[no-untyped-def]
        import subprocess

        if cmd[:2] == ["systemctl", "is-active"]:
            self.calls.append(cmd)
            return subprocess.CompletedProcess(cmd, 0 if self.running else 3, "", "")
        return super().__call__(cmd, check)


@pytest.mark.parametrize("running", [True, False], ids=["running", "dead"])
def test_the_backups_slurmdbd_stands_by_with_its_port_closed(
    aws: Any, tmp_path: Path, running: bool
) -> None:
    """DbdBackupHost listens only once it takes over (slurmdbd.c, run_dbd_backup): on the
    backup, accounting-db waits for its unit to run, not for its port (nothing listens on it
    here: waiting for it would fail the boot)."""
    run = SlurmdbdUnit(running)
    node = controller(tmp_path, aws, BACKUP, run)
    params.params(node, poll=0)
    database = AccountingDatabase(
        type=DatabaseType.EXTERNAL,
        host="10.42.0.200",
        port=3306,
        name="slurm_acct_db",
        user="slurm",
        password_secret="db-password",
    )
    aws.client("secretsmanager").create_secret(Name="db-password", SecretString="pw")
    config = AccountingConfig(cluster=PLAN.name, enabled=True, slurmdbd_port=1, database=database)
    for path, text in (
        (ACCOUNTING_CONFIG_PATH, dump_document(config)),
        (SLURMDBD_CONF_RENDERED_PATH, "StorageType=accounting_storage/mysql\n"),
    ):
        target = tmp_path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    if running:
        out = accounting_db(node, timeout=0.0, poll=0.0)
        assert out["standby"] is True
    else:
        with pytest.raises(AgentError, match=r"slurmdbd\.service is not running"):
            accounting_db(node, timeout=0.0, poll=0.0)
    assert ["systemctl", "is-active", "--quiet", "slurmdbd.service"] in run.calls


class Backup(Runner):
    """scontrol as the head sees it with its own slurmctld not started: the backup answers
    pings for ``stops_after`` more pings after the shutdown (None: never stops)."""

    def __init__(self, stops_after: int | None = 2) -> None:
        super().__init__()
        self.stops_after = stops_after
        self.shut = False

    def __call__(self, cmd: list[str], check: bool = True):
        import subprocess

        self.calls.append(cmd)
        words = cmd[4:] if cmd[:2] == ["timeout", "-k"] else cmd
        if words[-2:] == ["shutdown", "slurmctld"]:
            self.shut = True  # slurm_shutdown reports the primary's answer: not started
            err = "slurm_shutdown error: Unable to contact slurm controller (connect failure)\n"
            return subprocess.CompletedProcess(cmd, 1, "", err)
        if words[-1:] == ["ping"]:
            up = not self.shut or self.stops_after is None or self.stops_after > 0
            if self.shut and self.stops_after:
                self.stops_after -= 1
            backup = "UP" if up else "DOWN"
            out = f"Slurmctld(primary) at h is DOWN\nSlurmctld(backup) at b is {backup}\n"
            return subprocess.CompletedProcess(cmd, 1, out, "")
        return subprocess.CompletedProcess(cmd, 0, "", "")


@pytest.mark.parametrize(
    ("address", "heartbeat", "stops"),
    [
        (HEAD, (5, 1), True),  # the backup in control: asked to stop, waited for
        (HEAD, (5, 0), False),  # the head's own heartbeat: nothing to hand back
        (HEAD, (SLURMCTLD_TIMEOUT_WITH_BACKUP_SECONDS + 5, 1), False),  # the backup is gone
        (BACKUP, (5, 1), False),  # the backup's own slurmctld start: never
    ],
    ids=["backup-in-control", "head-in-control", "stale", "on-the-backup"],
)
def test_a_returning_head_has_the_backup_save_its_state_and_stop_first(
    aws: Any, tmp_path: Path, address: str, heartbeat: tuple[float, int], stops: bool
) -> None:
    run = Backup()
    node = controller(tmp_path, aws, address, run)
    params.params(node, poll=0)
    beat(tmp_path, *heartbeat)
    calls = len(run.calls)
    done = handback.handback(node)
    scontrol = [c[4:] for c in run.calls[calls:] if "scontrol" in c]
    if not stops:
        assert scontrol == [] and not done.startswith("the backup stopped"), done
        return
    assert scontrol[0][-2:] == ["shutdown", "slurmctld"]
    assert [c[-1] for c in scontrol[1:]] == ["ping"] * 3  # up, up, down
    assert done == "the backup stopped after 2 s"


def test_a_backup_that_does_not_stop_leaves_the_start_to_slurms_own_handback(
    aws: Any, tmp_path: Path
) -> None:
    run = Backup(stops_after=None)
    node = controller(tmp_path, aws, HEAD, run)
    params.params(node, poll=0)
    beat(tmp_path, 5, 1)
    done = handback.handback(node)
    assert done == f"the backup did not stop within {handback.STOP_WAIT_SECONDS} s"
    pings = [c for c in run.calls if c[-1:] == ["ping"]]
    assert len(pings) == handback.STOP_WAIT_SECONDS + 1  # bounded: one a second


def test_the_slurmctld_unit_hands_back_and_restarts_only_with_a_backup() -> None:
    with_backup = slurmctld_dropin(PLAN)
    assert "ExecStartPre=/usr/local/bin/slurmstack-node handback" in with_backup
    assert "Restart=always" in with_backup and "RestartSec=15" in with_backup
    without = slurmctld_dropin(NO_BACKUP)
    assert "handback" not in without and "Restart=" not in without
