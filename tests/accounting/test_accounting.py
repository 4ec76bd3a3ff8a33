"""Accounting with real MariaDB, slurmdbd, slurmctld and a dynamic GPU node on loopback (see
conftest.py for everything that differs from a head node). The tests share one head, booted
as the head's cloud-init boots it, and run in this order."""

from __future__ import annotations

import copy
import json
import os
import pwd
import shutil
import stat
import time
from typing import Any

import pytest

from accounting.conftest import ACCOUNTING, PRICE, AccountingHead, definition, plan_of, wait_until
from slurmstack import contract
from slurmstack.node import cli
from slurmstack.node.accounting import usage
from slurmstack.node.accounting.apply import accounting_apply
from slurmstack.node.accounting.sacctmgr import parse_tres
from slurmstack.render import head_files

pytestmark = pytest.mark.accounting

CLUSTER = "llm-train"
JOB_FIELDS = ("JobID", "User", "Account", "Partition", "AllocTRES", "State")


def job_by_user(head: AccountingHead, *fields: str) -> dict[str, dict[str, str]]:
    return {job["User"]: job for job in head.sacct_jobs(*fields)}


def test_jobs_are_recorded_with_their_gpu_tres(head: AccountingHead) -> None:
    head.job("sys", "-A", "team-a", "--gres=gpu:l40s:2", "-c", "1", command="sleep 2")
    head.job("daemon", "-A", "team-b", "--gres=gpu:1", "-c", "4", command="sleep 1")
    head.job("bin", "-A", "team-c", "-c", "24", command="sleep 1")
    # Accounts are declared, so enforcement is on: a user in no account runs nothing.
    refused = head.job("games", command="true", check=False)
    assert refused.returncode != 0
    assert "invalid account" in refused.stderr.lower(), refused.stderr
    wait_until(
        lambda: [j["State"] for j in head.sacct_jobs("State")].count("COMPLETED") >= 3,
        "three completed jobs in sacct",
        head,
    )
    jobs = job_by_user(head, *JOB_FIELDS)
    assert {user: (j["Account"], j["Partition"]) for user, j in jobs.items()} == {
        "sys": ("team-a", "dev"),
        "daemon": ("team-b", "dev"),
        "bin": ("team-c", "dev"),
    }
    tres = {user: parse_tres(job["AllocTRES"]) for user, job in jobs.items()}
    # Asked by type: both the GPU count and the typed count are recorded.
    assert tres["sys"]["gres/gpu"] == 2 and tres["sys"]["gres/gpu:l40s"] == 2
    assert tres["daemon"]["gres/gpu"] == 1
    assert "gres/gpu" not in tres["bin"] and tres["bin"]["cpu"] == 24
    # slurmctld registered the cluster and the rendered AccountingStorageTRES.
    assert head.sacctmgr("show", "cluster", "format=cluster").split() == [CLUSTER]
    tracked = set(head.sacctmgr("show", "tres", "format=type,name").split())
    assert {"gres|gpu", "gres|gpu:h100", "gres|gpu:l40s"} <= tracked


def test_the_password_is_only_in_the_live_slurmdbd_conf(head: AccountingHead) -> None:
    live = head.node_path(contract.SLURMDBD_CONF_PATH)
    info = live.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600
    assert pwd.getpwuid(info.st_uid).pw_name == "slurm"
    assert f"StoragePass={head.password}\n" in live.read_text()
    # The rendered files (the config store's objects) and the database's plain-text files
    # hold no password; slurmdbd authenticates with the one the agent set.
    assert head.plan is not None
    for path, text in head_files(head.plan).items():
        assert head.password not in text, path
    log = (head.root / "log" / "slurmdbd.log").read_text()
    assert "Access denied" not in log and head.password not in log


def test_slurmdbd_finds_the_database_as_it_asks(head: AccountingHead) -> None:
    """slurmdbd checks the server's settings at start and logs an error for each it advises
    against: the rendered MariaDB configuration leaves none (MariaDB 11.8 turns
    innodb_snapshot_isolation on by default, which stops slurmdbd at a write conflict)."""
    logs = "".join(
        path.read_text() for path in (head.root / "log").glob("slurmdbd.*") if path.is_file()
    )
    assert "slurmdbd version" in logs
    assert "innodb_snapshot_isolation" not in logs
    # The buffer pool is the test's (BUFFER_POOL, smaller than slurmdbd's advice): the one
    # setting slurmdbd names.
    advice = [line for line in logs.splitlines() if "not recommended values" in line]
    assert advice, logs
    assert all(line.endswith("values: innodb_buffer_pool_size") for line in advice), advice


def test_usage_report_matches_hand_computed_figures(
    head: AccountingHead, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = job_by_user(head, "User", "ElapsedRaw", "AllocTRES", "Start", "End")
    hours = {user: int(job["ElapsedRaw"]) / 3600 for user, job in jobs.items()}
    cpus = {user: parse_tres(job["AllocTRES"])["cpu"] for user, job in jobs.items()}
    # g6e.12xlarge: 4 GPUs, 48 vCPUs, PRICE (8 USD) an hour. A job pays its share of a node:
    # the larger of GPUs/4 and CPUs/48.
    assert cpus == {"sys": 2, "daemon": 4, "bin": 24}
    expected = {
        "team-a": (2 * hours["sys"], PRICE * max(2 / 4, 2 / 48) * hours["sys"]),
        "team-b": (1 * hours["daemon"], PRICE * max(1 / 4, 4 / 48) * hours["daemon"]),
        "team-c": (0.0, PRICE * (24 / 48) * hours["bin"]),
    }
    now = time.time()
    report = usage.usage(head.agent(), now - 86400, now + 60).as_dict()
    got = {a: (t["gpu_hours"], t["cost_usd"]) for a, t in report["accounts"].items()}
    assert got.keys() == expected.keys()
    for account, (gpu_hours, cost) in expected.items():
        assert got[account] == pytest.approx((gpu_hours, cost), rel=1e-9), account
    users = {(r["account"], r["user"]): r["jobs"] for r in report["users"]}
    assert users == {("team-a", "sys"): 1, ("team-b", "daemon"): 1, ("team-c", "bin"): 1}
    assert report["total"]["gpu_hours"] == pytest.approx(sum(g for g, _ in expected.values()))
    assert report["unpriced_pools"] == []
    # A period that starts one second into the first job counts one second less of it.
    start = time.mktime(time.strptime(jobs["sys"]["Start"], "%Y-%m-%dT%H:%M:%S")) + 1
    end = time.mktime(time.strptime(jobs["sys"]["End"], "%Y-%m-%dT%H:%M:%S"))
    clipped = usage.usage(head.agent(), start, end).as_dict()
    assert clipped["accounts"].keys() == {"team-a"}
    assert clipped["total"]["gpu_hours"] == pytest.approx(2 * (hours["sys"] - 1 / 3600))
    # The agent's command prints the same figures.
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now - 86400))
    code = cli.main(
        ["--root", str(head.root), "usage", "--json", "--start", stamp], ctx=head.agent()
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["accounts"] == report["accounts"]


def associations(head: AccountingHead) -> dict[tuple[str, str], dict[str, str]]:
    fields = ("account", "user", "parentname", "fairshare", "qos", "defaultqos", "grptres")
    text = head.sacctmgr(
        "show", "assoc", "where", f"cluster={CLUSTER}", f"format={','.join(fields)}"
    )
    rows = [dict(zip(fields, line.split("|"), strict=True)) for line in text.splitlines()]
    return {(r["account"], r["user"]): r for r in rows}


def qos_table(head: AccountingHead) -> dict[str, dict[str, str]]:
    fields = ("name", "priority", "maxwall", "maxtrespu", "grptres")
    text = head.sacctmgr("show", "qos", f"format={','.join(fields)}")
    rows = [dict(zip(fields, line.split("|"), strict=True)) for line in text.splitlines()]
    return {r["name"]: r for r in rows}


def test_accounts_users_and_qos_follow_the_definition(head: AccountingHead) -> None:
    # As applied at boot.
    assoc = associations(head)
    accounts = {a for a, u in assoc if not u} - {"root"}
    assert accounts == {"team-a", "team-b", "team-c", "team-d"}
    assert assoc[("team-a", "")]["fairshare"] == "60"
    assert assoc[("team-a", "")]["qos"] == "big,normal"
    assert assoc[("team-c", "")]["parentname"] == "team-a"
    assert assoc[("team-c", "")]["qos"] == "big,normal"  # inherited from team-a
    assert assoc[("team-d", "")]["grptres"] == "gres/gpu=4"
    members = {(u, a) for a, u in assoc if u and a != "root"}
    assert members == {
        ("sys", "team-a"),
        ("alice", "team-a"),
        ("daemon", "team-b"),
        ("bob", "team-b"),
        ("bin", "team-c"),
        ("alice", "team-c"),
        ("dave", "team-d"),
    }
    qos = qos_table(head)
    assert qos["big"]["priority"] == "100" and qos["big"]["maxwall"] == "02:00:00"
    assert parse_tres(qos["big"]["maxtrespu"]) == {"gres/gpu": 4, "gres/gpu:l40s": 4}
    assert qos["bulk"]["grptres"] == "node=1"
    described = dict(
        line.split("|")
        for line in head.sacctmgr("show", "account", "format=account,description").splitlines()
    )
    assert described["team-a"] == "team a"  # sacctmgr folds descriptions to lowercase
    defaults = dict(
        line.split("|")
        for line in head.sacctmgr("show", "user", "format=user,defaultaccount").splitlines()
    )
    assert defaults["alice"] == "team-a" and defaults["root"] == "root"

    # Applying the same definition again changes nothing.
    again = accounting_apply(head.agent())
    assert again["done"] == [] and again["failed"] == {}

    # An operator's own: an account with a user, and a user in one of slurmstack's accounts.
    for args in (
        ("add", "account", "ops", f"cluster={CLUSTER}"),
        ("add", "user", "erin", "account=ops", f"cluster={CLUSTER}"),
        ("add", "user", "frank", "account=team-b", f"cluster={CLUSTER}"),
    ):
        head.sacctmgr("-i", *args)

    # The definition drops team-b, team-c, dave and the bulk QoS, and changes big.
    changed: dict[str, Any] = copy.deepcopy(ACCOUNTING)
    changed["accounts"] = [a for a in changed["accounts"] if a["name"] in ("team-a", "team-d")]
    changed["accounts"][1]["users"] = []
    changed["qos"] = [{**changed["qos"][0], "priority": 200, "max_wall_minutes": None}]
    head.install(plan_of(definition(changed)))
    result = accounting_apply(head.agent())
    assert result["failed"] == {}, result
    # Users leave first (sacctmgr keeps an account that is someone's default), then team-c.
    assert result["done"] == [
        "modify qos big",
        "remove user alice from team-c",
        "remove user bin from team-c",
        "remove user bob from team-b",
        "remove user daemon from team-b",
        "remove user dave from team-d",
        "remove account team-c",
        "remove qos bulk",
    ]
    # team-b holds frank, whom slurmstack did not add: it stays, and the result says why.
    assert result["kept"] == {
        "account team-b": "holds user frank, which slurmstack did not create or keeps"
    }
    assoc = associations(head)
    accounts = {a for a, u in assoc if not u} - {"root"}
    assert accounts == {"team-a", "team-b", "team-d", "ops"}
    members = {(u, a) for a, u in assoc if u and a != "root"}
    assert members == {
        ("sys", "team-a"),
        ("alice", "team-a"),
        ("frank", "team-b"),
        ("erin", "ops"),
    }
    qos = qos_table(head)
    assert set(qos) == {"normal", "big"}
    assert qos["big"]["priority"] == "200" and qos["big"]["maxwall"] == ""
    # And once more: nothing left to do.
    again = accounting_apply(head.agent())
    assert again["done"] == [] and again["failed"] == {}


def test_the_database_survives_a_head_replacement(head: AccountingHead) -> None:
    before = head.sacct_jobs(*JOB_FIELDS)
    assert len(before) >= 3
    head.stop_all()
    # A new head node: only the state volume (and the secret) carries over. The live
    # slurmdbd.conf, the rendered files and MariaDB's socket are gone with the old one.
    for gone in ("etc", "run/mysqld"):
        for entry in (head.root / gone).iterdir():
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    assert head.plan is not None
    booted = head.boot(head.plan)
    assert booted["db"]["initialized"] is False  # the database was found, not made
    assert booted["apply"]["done"] == []  # and still holds what the definition says
    assert head.sacct_jobs(*JOB_FIELDS) == before
    assert (head.node_path(contract.MARIADB_DATA_DIR) / "slurm_acct_db").is_dir()
    data_dir = os.stat(head.node_path(contract.MARIADB_DATA_DIR))
    assert data_dir.st_uid == pwd.getpwnam("mysql").pw_uid
