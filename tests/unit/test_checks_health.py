"""Rules in slurmstack.checks.health: each case triggers exactly its rule."""

from __future__ import annotations

import pytest
from checks_support import Case, check_case, definition, findings, set_in

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
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


def test_overrides_of_known_causes_pass() -> None:
    overrides = {"gpu-xid:79": "reboot", "efa-port": "replace", "slurm:Not responding": "leave"}
    assert findings(definition(set_in("health", {"actions": overrides}))) == []
