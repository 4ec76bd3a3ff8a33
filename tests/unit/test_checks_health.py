"""Rules in slurmstack.checks.health: each case triggers exactly its rule."""

from __future__ import annotations

import pytest

from slurmstack.findings import Level
from slurmstack.validate import validate_object
from support.checks import Case, check_case, definition, findings, set_in

CASES = [
    Case(
        "health-action-cause",
        set_in("health", {"actions": {"gpu-xid:97": "reboot"}}),
        "health.actions.gpu-xid:97",
        "not a cause of the repair table (did you mean",
    ),
    Case(
        "health-action-cause",
        set_in("health", {"actions": {"efa_port": "replace"}}),
        "health.actions.efa_port",
        "did you mean 'efa-port'?",
        name="typo",
    ),
    Case(
        "health-action-cause",
        set_in("health", {"actions": {"Action:Replace": "leave"}}),
        "health.actions.Action:Replace",
        "done as asked",
        name="operator",
    ),
    Case(
        "health-action-cause",
        set_in("health", {"actions": {"launch": "replace"}}),
        "health.actions.launch",
        "launch is the power programs' to retry, not the controller's; remove it",
        name="launch",
    ),
    Case(
        "health-action-cause",
        set_in("health", {"actions": {"gpu-xid:167": "reboot"}}),
        "health.actions.gpu-xid:167",
        "add it to health.xids (e.g. health.xids: {167: reboot})",
        name="xid-not-in-table",
    ),
    Case(
        "health-xids",
        set_in("health", {"actions": {"gpu-xid:79": "reboot"}, "xids": {79: "leave"}}),
        "health.xids.79",
        "XID 79 is set twice: here (leave) and in health.actions.gpu-xid:79 (reboot)",
    ),
    Case(
        "health-xids",
        set_in("health", {"xids": {13: "ignore"}}),
        "health.xids.13",
        "XID 13 does not drain a node by default",
        level=Level.WARNING,
        name="ignore-unknown",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


def test_xids_added_or_changed_pass() -> None:
    xids = {167: "reboot", 79: "reboot", 74: "ignore", "13": "leave"}
    assert findings(definition(set_in("health", {"xids": xids}))) == []


@pytest.mark.parametrize(
    ("xids", "message"),
    [
        ({"abc": "reboot"}, "'abc' is not an XID: keys are XID numbers from 1 to 999"),
        ({0: "reboot", 1000: "leave"}, "0, 1000 are not XIDs"),
        ({79: "rebot"}, "'rebot' is not one of reboot, replace, leave, ignore; did you mean"),
    ],
)
def test_bad_xids_are_refused_with_the_path_and_the_fix(xids: dict, message: str) -> None:
    result = validate_object(definition(set_in("health", {"xids": xids})), source="test")
    assert result.spec is None and len(result.findings) == 1, result.findings
    (found,) = result.findings
    assert found.path.startswith("health.xids") and message in found.message, found


def test_overrides_of_known_causes_pass() -> None:
    overrides = {
        "gpu-xid:79": "reboot",
        "efa-port": "replace",
        "slurm:Not responding": "leave",
        "nccl-allreduce": "replace",
    }
    assert findings(definition(set_in("health", {"actions": overrides}))) == []
