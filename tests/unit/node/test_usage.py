"""The usage report (slurmstack/node/usage.py): its arithmetic on fixed sacct output, figures
computed by hand, and the command line around it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from slurmstack.contract import (
    ACCOUNTING_CONFIG_PATH,
    AccountingConfig,
    AccountingDatabase,
    DatabaseType,
    PoolPrice,
    dump_document,
)
from slurmstack.node import cli
from slurmstack.node.accounting import usage
from slurmstack.node.accounting.usage import parse_sacct, parse_when, render_table, summarize
from slurmstack.node.context import Context

# sacct -a -X -n -P --format=JobIDRaw,User,Account,Partition,Start,End,State,AllocTRES with
# SLURM_TIME_FORMAT=standard, as Slurm 22.05 prints it (a pending job has Start=Unknown, a
# running one End=Unknown).
SACCT = """\
11|alice|ml|train|2026-11-02T10:00:00|2026-11-02T12:00:00|COMPLETED|billing=192,cpu=192,gres/gpu:h100=8,gres/gpu=8,mem=2000G,node=1
12|bob|ml|dev|2026-11-02T11:00:00|2026-11-02T11:30:00|COMPLETED|billing=4,cpu=4,gres/gpu:l40s=1,gres/gpu=1,mem=30G,node=1
13|carol|infra|dev|2026-11-02T11:00:00|2026-11-02T12:00:00|FAILED|billing=24,cpu=24,mem=100G,node=1
14|carol|infra|dev|Unknown|Unknown|PENDING|billing=1,cpu=1,node=1
15|dave|infra|cpu|2026-11-02T11:00:00|Unknown|RUNNING|billing=8,cpu=8,node=1
16|erin|ml|train|2026-11-01T23:00:00|2026-11-02T01:00:00|COMPLETED|billing=384,cpu=384,gres/gpu:h100=16,gres/gpu=16,mem=4000G,node=2
"""
POOLS = (
    PoolPrice("train", "p5.48xlarge", 55.04, "t", 8, 192),
    PoolPrice("dev", "g6e.12xlarge", 8.0, "t", 4, 48),
    PoolPrice("cpu", "x.large", None, "none", 0, 8),
)


def test_usage_by_hand() -> None:
    jobs = parse_sacct(SACCT)
    assert [j.job for j in jobs] == ["11", "12", "13", "15", "16"]  # 14 never started
    start, end = parse_when("2026-11-02"), parse_when("2026-11-02T11:45")
    report = summarize(jobs, POOLS, start, end, now=parse_when("2026-11-02T13:00"))
    data = report.as_dict()
    # 11: 1.75 h in the period on one whole p5 (8 of 8 GPUs): 14 GPU-h, 1.75 x 55.04.
    # 12: 0.5 h, 1 of 4 GPUs (4 of 48 CPUs is less): 0.5 GPU-h, 0.5 x 0.25 x 8 = 1.
    # 16: 1 h of its 2 inside the period, two whole p5s: 16 GPU-h, 2 x 55.04.
    ml = data["accounts"]["ml"]
    assert ml["jobs"] == 3
    assert ml["gpu_hours"] == pytest.approx(14 + 0.5 + 16)
    assert ml["cost_usd"] == pytest.approx(1.75 * 55.04 + 1.0 + 2 * 55.04)
    # 13: 0.75 h, 24 of 48 CPUs, no GPU: 0.75 x 0.5 x 8 = 3. 15: running, unpriced pool.
    infra = data["accounts"]["infra"]
    assert infra == {
        "jobs": 2,
        "gpu_hours": 0.0,
        "cost_usd": pytest.approx(3.0),
        "unpriced_jobs": 1,
    }
    users = {(u["account"], u["user"]): u for u in data["users"]}
    assert users[("ml", "alice")]["gpu_hours"] == pytest.approx(14)
    assert data["unpriced_pools"] == ["cpu"]
    assert data["total"]["gpu_hours"] == pytest.approx(30.5)
    table = render_table(report, POOLS)
    assert "ml" in table and "30.50" in table and "leave out the jobs of cpu" in table


def test_a_job_outside_the_period_counts_nothing() -> None:
    jobs = parse_sacct(SACCT)
    report = summarize(
        jobs,
        POOLS,
        parse_when("2026-11-03"),
        parse_when("2026-11-04"),
        now=parse_when("2026-11-02T13:00"),
    )
    assert report.as_dict()["total"]["jobs"] == 0


def test_neuron_devices_count_as_accelerators() -> None:
    line = (
        "21|ann|ml|trn|2026-11-02T10:00:00|2026-11-02T11:00:00|COMPLETED|"
        "cpu=8,gres/neuron:trainium2=4,gres/neuron=4,node=1\n"
    )
    pools = (PoolPrice("trn", "trn2.48xlarge", 16.0, "t", 16, 192),)
    start, end = parse_when("2026-11-02"), parse_when("2026-11-03")
    total = summarize(parse_sacct(line), pools, start, end, now=end).as_dict()["total"]
    # 4 of 16 devices for an hour: 4 device-hours, a quarter of 16 USD.
    assert total["gpu_hours"] == pytest.approx(4.0) and total["cost_usd"] == pytest.approx(4.0)


def test_usage_refuses_a_bad_date(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--root", str(tmp_path), "usage", "--start", "yesterday"]) == 2
    assert "not a date" in capfd.readouterr().err


def test_the_command_asks_sacct_for_the_period_and_prints_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The head's prices come from accounting.json; sacct is asked for every user's job
    allocations of the period, in the standard time format the parser reads."""
    config = AccountingConfig(
        cluster="c",
        enabled=True,
        database=AccountingDatabase(DatabaseType.LOCAL, "localhost", 3306, "db", "slurm", "s"),
        pools=POOLS,
    )
    path = tmp_path / ACCOUNTING_CONFIG_PATH.lstrip("/")
    path.parent.mkdir(parents=True)
    path.write_text(dump_document(config))
    asked: list[list[str]] = []

    def sacct(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        asked.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, SACCT, "")

    ctx = Context(root=tmp_path, run=sacct, clock=lambda: parse_when("2026-11-02T13:00"))
    args = ["--root", str(tmp_path), "usage", "--start", "2026-11-02", "--end", "2026-11-02T11:45"]
    assert cli.main(args, ctx=ctx) == 0
    (cmd,) = asked
    assert cmd[:3] == ["env", "SLURM_TIME_FORMAT=standard", "sacct"]
    assert "--allusers" in cmd and "--allocations" in cmd
    assert "--starttime=2026-11-02T00:00:00" in cmd and "--endtime=2026-11-02T11:45:00" in cmd
    table = capsys.readouterr().out
    assert "usage from 2026-11-02T00:00:00 to 2026-11-02T11:45:00" in table
    assert "train: p5.48xlarge 55.0400 USD (t)" in table
    # --json: the same figures; by default the month so far.
    assert cli.main(["--root", str(tmp_path), "usage", "--json"], ctx=ctx) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["start"] == "2026-11-01T00:00:00" and data["end"] == "2026-11-02T13:00:00"
    assert data["total"]["jobs"] == 5
    assert usage.usage(ctx).as_dict() == data
