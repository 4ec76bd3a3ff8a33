"""plan.health and health_policy: the policy is data, rendered from the definition, and the
README quotes it."""

from __future__ import annotations

from slurmstack.contract import OPERATOR_ACTION, Check, Remedy, cause_of, reason
from slurmstack.plan.health import plan_health
from slurmstack.rules.health_policy import CAUSES, CRITICAL_XIDS, FIXED_CAUSES, OVERRIDABLE_CAUSES
from slurmstack.spec import HealthSpec
from support.examples import example_plan


def test_every_check_a_node_reports_has_a_row() -> None:
    causes = {c.cause for c in CAUSES}
    for check in Check:
        if check is Check.GPU_XID:
            continue  # one row per XID
        assert check.value in causes, check
    assert {f"gpu-xid:{x.number}" for x in CRITICAL_XIDS} <= causes
    assert len(causes) == len(CAUSES)
    assert FIXED_CAUSES | set(OVERRIDABLE_CAUSES) == causes


def test_reasons_map_to_rows() -> None:
    text = reason(Check.GPU_XID, "79 pid=1, GPU has fallen off the bus")
    assert cause_of(*text.removeprefix("slurmstack:").split(": ", 1)) == "gpu-xid:79"
    asked = OPERATOR_ACTION.search("drained by bob Action:Replace")
    assert asked is not None and f"Action:{asked[1]}" in FIXED_CAUSES


def test_the_definition_overrides_and_limits_reach_the_policy() -> None:
    spec = HealthSpec(
        actions={"gpu-xid:79": "reboot", "efa-port": "replace"},
        breaker={"replacements": 5, "window_minutes": 30},
        capacity_block_drain_minutes=90,
        scale_in_wait_minutes=15,
    )
    policy = plan_health(spec).repair
    assert policy.remedy("gpu-xid:79") is Remedy.REBOOT
    assert policy.remedy("efa-port") is Remedy.REPLACE
    assert policy.remedy("gpu-count") is Remedy.REPLACE  # untouched
    assert policy.remedy("Action:Replace") is Remedy.REPLACE
    assert (policy.breaker_replacements, policy.breaker_window_minutes) == (5, 30)
    assert (policy.capacity_block_drain_minutes, policy.scale_in_wait_minutes) == (90, 15)


def test_the_worst_xid_is_named_first() -> None:
    default = plan_health(HealthSpec())
    assert default.critical_xids[:2] == (64, 79)  # replaced; the reboots after
    flipped = plan_health(HealthSpec(actions={"gpu-xid:79": "reboot", "gpu-xid:48": "replace"}))
    assert flipped.critical_xids[:2] == (48, 64)


def test_nodes_get_their_checks_in_node_json() -> None:
    plan = example_plan("p5-training")
    train = plan.health.node_health(8, 0, 32)
    assert train.critical_xids == plan.health.critical_xids and train.deep_diagnostic
    cpu = plan.health.node_health(0, 0, 0)
    assert cpu.critical_xids == () and not cpu.deep_diagnostic
    assert cpu.disk_full_percent == 95


def test_the_docs_quote_the_table() -> None:
    import docs

    table = docs.repair_table_page()
    assert (docs.REPO / "docs/reference/repair-table.md").read_text() == table, docs.COMMAND
    for cause in CAUSES:
        assert f"| `{cause.cause}` |" in table


def test_the_definition_adds_changes_and_ignores_xids() -> None:
    plan = plan_health(HealthSpec(xids={167: "reboot", 13: "leave", 79: "reboot", 74: "ignore"}))
    assert 167 in plan.critical_xids and 13 in plan.critical_xids
    assert 74 not in plan.critical_xids
    assert plan.critical_xids[0] == 64  # 79 is rebooted now: 64 is the one replaced
    assert plan.repair.remedy("gpu-xid:167") is Remedy.REBOOT
    assert plan.repair.remedy("gpu-xid:13") is Remedy.LEAVE
    assert plan.repair.remedy("gpu-xid:79") is Remedy.REBOOT
    assert plan.critical_xids.index(13) == len(plan.critical_xids) - 1  # leave: named last
    assert plan.node_health(8, 0, 32).critical_xids == plan.critical_xids


def test_every_xid_row_cites_nvidia_s_resolution() -> None:
    """The catalog's immediate resolution bucket, per row, in the docs' table."""
    buckets = ("RESET_GPU", "RESTART_BM", "RESTART_VM", "WORKFLOW_", "XID_154")
    import docs

    table = docs.repair_table_page()
    for xid in CRITICAL_XIDS:
        assert xid.nvidia.startswith(buckets), xid
        row = next(line for line in table.splitlines() if f"`gpu-xid:{xid.number}`" in line)
        assert f"NVIDIA: {xid.nvidia}" in row
    numbers = {x.number for x in CRITICAL_XIDS}
    # NVIDIA's catalog resets the GPU for these; the application's and IGNORE ones stay out.
    assert {109, 119, 120, 136, 143, 149, 154, 158} <= numbers
    assert not {13, 31, 43, 45, 63, 92, 94} & numbers
