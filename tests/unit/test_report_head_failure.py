"""`plan`'s head-failure section (slurmstack.report.head_failure): the chosen configuration,
each configuration's recovery time built from the alarms the stack makes, its cost from the
price table, and the console table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from slurmstack.cli import app
from slurmstack.loader import load_object
from slurmstack.plan import build_plan
from slurmstack.plan.head import (
    BACKUP_SLURMCTLD_TIMEOUT_SECONDS,
    BACKUP_TAKEOVER_SECONDS_MAX,
    RECOVERY_ALARMS,
)
from slurmstack.report.cost import cost_report, instance_price, service_prices
from slurmstack.report.head_failure import (
    DBD_FAILOVER,
    HANDBACK,
    HEAD_RESTART,
    HOST_MOVE,
    STATE_LOAD,
    head_failure_section,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _plan(auto_recovery: bool | None = None, backup: bool = False):  # type: ignore[no-untyped-def]
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / "p5-training.yaml").read_text())
    if auto_recovery is not None:
        data["head_node"]["auto_recovery"] = auto_recovery
    if backup:
        data["head_node"]["backup"] = True
        data["slurm"]["accounting"]["database"] = {"type": "rds"}
    loaded = load_object(data)
    assert loaded.spec is not None, loaded.findings
    return build_plan(loaded.spec)


def test_auto_recovery_is_the_default_and_its_times_add_up_from_the_alarms() -> None:
    section = head_failure_section(_plan())
    assert section["configuration"] == "auto_recovery"
    assert [a["action"] for a in section["alarms"]] == ["recover", "reboot"]
    auto = {c["name"]: c for c in section["configurations"]}["auto_recovery"]
    host, hung, lost = auto["recovery"]
    recover, reboot = (a.failed_minutes * 60 for a in RECOVERY_ALARMS)
    assert host["seconds"] == recover + HOST_MOVE.seconds + HEAD_RESTART.seconds
    assert hung["seconds"] == reboot + HEAD_RESTART.seconds
    assert all(step["basis"] for case in (host, hung) for step in case["steps"])
    # What no alarm recovers from is said, with the time it takes by hand.
    assert lost["seconds"] is None and lost["by_hand"][0]["seconds"] > 0


def test_what_it_costs_comes_from_the_price_table_and_is_in_the_cost_report() -> None:
    prices = service_prices()
    alarm = prices["cloudwatch_alarm_usd_per_month"]["value"]
    key = prices["kms_key_usd_per_month"]["value"]
    on, off = _plan(), _plan(auto_recovery=False)
    assert head_failure_section(on)["monthly_usd"] == round(key + len(RECOVERY_ALARMS) * alarm, 2)
    assert head_failure_section(off)["monthly_usd"] == round(key, 2)
    assert head_failure_section(off)["configuration"] == "none"
    assert head_failure_section(off)["alarms"] == []
    items = {line.item for line in cost_report(on).lines}
    assert {"alert topic's KMS key", "head node recovery alarms"} <= items
    assert "head node recovery alarms" not in {line.item for line in cost_report(off).lines}


def test_plan_json_and_table_show_it() -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["plan", "examples/p5-training.yaml", "--json"])
    assert out.exit_code == 0, out.output
    section = json.loads(out.stdout)["head_failure"]
    assert section["configuration"] == "auto_recovery" and section["monthly_usd"] > 0
    table = runner.invoke(app, ["plan", "examples/p5-training.yaml"]).stdout
    assert "When the head node fails: auto_recovery" in table
    assert "alarm ~2 min + move to a new host ~3 min + boot, slurmctld up ~2 min" in table


def test_a_backup_controller_takes_over_within_its_timeout_and_costs_a_second_head() -> None:
    plan, plain = _plan(backup=True), _plan()
    section = head_failure_section(plan)
    assert section["configuration"] == "backup_controller"
    assert "until the backup has taken control" in section["while_down"]
    backup = {c["name"]: c for c in section["configurations"]}["backup_controller"]
    down, back, lost = backup["recovery"]
    # SlurmctldTimeout plus one of the backup's pings (a third of it), then the state read.
    assert BACKUP_TAKEOVER_SECONDS_MAX == BACKUP_SLURMCTLD_TIMEOUT_SECONDS * 4 // 3
    # With accounting, a dead head's slurmdbd is tried (and times out) before the backup serves.
    assert (
        down["seconds"] == BACKUP_TAKEOVER_SECONDS_MAX + DBD_FAILOVER.seconds + STATE_LOAD.seconds
    )
    assert back["seconds"] == HANDBACK.seconds and lost["seconds"] is None
    # It costs the head's instance again and its root volume, on top of the alarms and key.
    price, _, _ = instance_price(plan.head.instance_type, plan, plan.head.facts.price)
    assert price is not None
    added = section["monthly_usd"] - head_failure_section(plain)["monthly_usd"]
    assert added > price * 730 * 0.99
    lines = {line.item: line for line in cost_report(plan).lines}
    assert f"backup controller: {plan.head.instance_type}" in lines
    assert "backup controller: root volume" in lines
    # Slurm's state is on EFS: the head has no state volume to pay for.
    assert "head node: root volume" in lines
    assert "head node: root and Slurm state volumes" not in lines
    assert "EFS Slurm state" in {u.item for u in cost_report(plan).usage_billed}
    # The backup's instance has the head's two recovery alarms too.
    assert [(a["controller"], a["action"]) for a in section["alarms"]] == [
        ("head", "recover"),
        ("head", "reboot"),
        ("backup", "recover"),
        ("backup", "reboot"),
    ]
    alarms = lines["controller recovery alarms"]
    assert alarms.basis == f"{2 * len(RECOVERY_ALARMS)} standard-resolution alarms"
