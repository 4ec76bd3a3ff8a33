"""Rules in slurmstack.checks.head: each case triggers exactly its rule."""

from __future__ import annotations

import pytest

from slurmstack.spec import ClusterSpec
from support.checks import Case, both, check_case, definition, findings, set_in

CASES = [
    Case(
        "backup-needs-a-shared-database",
        set_in("head_node.backup", True),
        "head_node.backup",
        "set slurm.accounting.database.type to rds",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize(
    "accounting",
    [
        {"database": {"type": "rds"}},
        {"database": {"type": "external", "host": "db.example.internal", "password_secret": "db"}},
        {"enabled": False},
    ],
    ids=["rds", "external", "off"],
)
def test_a_backup_with_a_database_both_reach_is_no_finding(accounting: dict[str, object]) -> None:
    data = definition(
        both(set_in("head_node.backup", True), set_in("slurm.accounting", accounting))
    )
    assert findings(data) == []
    assert ClusterSpec.model_validate(data).head_node.backup


def test_no_backup_by_default() -> None:
    assert ClusterSpec.model_validate(definition()).head_node.backup is False
