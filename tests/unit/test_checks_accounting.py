"""Rules in slurmstack.checks.accounting: each case triggers exactly its rule."""

from __future__ import annotations

from typing import Any

import pytest

from slurmstack.findings import Level
from support.checks import Case, both, check_case, definition, findings, set_in

A = "slurm.accounting"


def accounting(**values: Any) -> Any:
    return set_in(A, values)


def team(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, **extra}


QOS = [{"name": "high", "priority": 100, "max_tres_per_user": {"gres/gpu": 16}}]

CASES = [
    Case(
        "accounting-head-memory",
        set_in("head_node.instance_type", "m7i.large"),
        "head_node.instance_type",
        "buffer pool gets an eighth of its memory, 1 GiB, below the 2 GiB under which slurmdbd",
        level=Level.WARNING,
    ),
    Case(
        "accounting-off-with-objects",
        accounting(enabled=False, accounts=[team("ml")]),
        f"{A}.accounts",
        "need accounting",
    ),
    Case(
        "accounting-database-fields",
        accounting(database={"type": "external", "password_secret": "db/slurm"}),
        f"{A}.database.host",
        "needs host",
    ),
    Case(
        "accounting-database-fields",
        accounting(database={"type": "external", "host": "db.example.internal"}),
        f"{A}.database.password_secret",
        "needs password_secret",
        name="secret",
    ),
    Case(
        "accounting-database-fields",
        accounting(database={"host": "db.example.internal"}),
        f"{A}.database.host",
        "is for type: external",
        name="local-host",
    ),
    Case(
        "accounting-database-fields",
        accounting(database={"instance_class": "db.r6g.large"}),
        f"{A}.database.instance_class",
        "is for type: rds",
        name="rds-only",
    ),
    # RDS's master user rule: a letter first, not a reserved word (CreateDBInstance).
    Case(
        "accounting-rds-names",
        accounting(database={"type": "rds", "user": "_slurm"}),
        f"{A}.database.user",
        "starts with a letter",
    ),
    Case(
        "accounting-rds-names",
        accounting(database={"type": "rds", "user": "rdsadmin"}),
        f"{A}.database.user",
        "'rdsadmin' is a reserved word",
        name="rdsadmin",
    ),
    Case(
        "accounting-rds-names",
        accounting(database={"type": "rds", "name": "select"}),
        f"{A}.database.name",
        "'select' is a reserved word of MariaDB",
        name="db-name",
    ),
    Case(
        "accounting-rds-network",
        accounting(database={"type": "rds", "user": "slurm_accounting_db"}),
        f"{A}.database.user",
        "at most 16 characters",
    ),
    Case(
        "accounting-rds-network",
        accounting(database={"type": "rds", "subnet_ids": ["subnet-0123456789abcdef0"] * 2}),
        f"{A}.database.subnet_ids",
        "is for an existing VPC",
        name="new-vpc",
    ),
    Case(
        "accounting-rds-network",
        both(
            accounting(database={"type": "rds"}),
            set_in(
                "network",
                {
                    "vpc_id": "vpc-0123456789abcdef0",
                    "compute_subnet_id": "subnet-0123456789abcdef0",
                    "compute_subnet_cidr": "10.1.0.0/20",
                },
            ),
        ),
        f"{A}.database.subnet_ids",
        "two or more subnets of that VPC",
        name="existing-vpc",
    ),
    Case(
        "accounting-rds-network",
        both(
            accounting(database={"type": "rds"}),
            set_in("network", {"vpc_cidr": "10.1.0.0/24", "compute_subnet_prefix": 24}),
        ),
        f"{A}.database.type",
        "two free /28 blocks",
        name="no-room",
        also=frozenset({"compute-subnet-prefix"}),
    ),
    Case(
        "accounting-account-duplicate",
        accounting(accounts=[team("ml"), team("ml")]),
        f"{A}.accounts[1].name",
        "declared twice",
    ),
    Case(
        "accounting-qos-duplicate",
        accounting(accounts=[team("ml")], qos=[*QOS, {"name": "high"}]),
        f"{A}.qos[1].name",
        "declared twice",
    ),
    Case(
        "accounting-reserved-name",
        accounting(accounts=[team("root")]),
        f"{A}.accounts[0].name",
        "root of Slurm's account tree",
    ),
    Case(
        "accounting-reserved-name",
        accounting(accounts=[team("ml")], qos=[{"name": "normal"}]),
        f"{A}.qos[0].name",
        "slurmdbd creates itself",
        name="normal",
    ),
    Case(
        "accounting-parent-unknown",
        accounting(accounts=[team("research"), team("vision", parent="reserch")]),
        f"{A}.accounts[1].parent",
        "did you mean 'research'",
    ),
    Case(
        "accounting-parent-cycle",
        accounting(accounts=[team("a", parent="b"), team("b", parent="a")]),
        f"{A}.accounts[0].parent",
        "a -> b -> a",
    ),
    Case(
        "accounting-parent-cycle",
        accounting(accounts=[team("a", parent="a")]),
        f"{A}.accounts[0].parent",
        "a -> a",
        name="self",
    ),
    Case(
        "accounting-qos-unknown",
        accounting(accounts=[team("ml", qos=["hihg"])], qos=QOS),
        f"{A}.accounts[0].qos[0]",
        "did you mean 'high'",
    ),
    Case(
        "accounting-qos-unknown",
        accounting(accounts=[team("ml", default_qos="low")], qos=QOS),
        f"{A}.accounts[0].default_qos",
        "'low' is not declared",
        name="default",
    ),
    Case(
        "accounting-default-qos-not-allowed",
        accounting(accounts=[team("ml", qos=["high"], default_qos="normal")], qos=QOS),
        f"{A}.accounts[0].default_qos",
        "not among the account's qos",
    ),
    Case(
        "accounting-user-repeated",
        accounting(accounts=[team("ml", users=["alice", "bob", "alice"])]),
        f"{A}.accounts[0].users[2]",
        "listed twice",
        also=frozenset({"account-user-unknown"}),  # no users declared: a warning per name
    ),
    Case(
        "accounting-tres-unknown",
        accounting(
            accounts=[team("ml")], qos=[{"name": "big", "max_tres_per_job": {"gres/gpu:a100": 8}}]
        ),
        f"{A}.qos[0].max_tres_per_job.gres/gpu:a100",
        "did you mean 'gres/gpu:h100'",
    ),
    Case(
        "accounting-tres-unknown",
        accounting(accounts=[team("ml", grp_tres={"gres/neuron": 8})]),
        f"{A}.accounts[0].grp_tres.gres/neuron",
        "not a resource this cluster tracks",
        name="account",
    ),
    Case(
        "accounting-qos-without-accounts",
        accounting(qos=QOS),
        f"{A}.qos",
        "no account is declared",
        level=Level.WARNING,
    ),
    Case(
        "accounting-qos-without-accounts",
        accounting(accounts=[team("ml")], qos=QOS, enforce=False),
        f"{A}.qos",
        "enforce is false",
        level=Level.WARNING,
        name="not-enforced",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


def test_a_full_accounting_section_has_no_finding() -> None:
    """Nested accounts, users in several accounts, QoS with GPU limits by type: all valid."""
    data = definition(
        accounting(
            accounts=[
                team("research", fairshare=60, qos=["high", "normal"]),
                team(
                    "vision", parent="research", users=["alice", "bob"], grp_tres={"gres/gpu": 64}
                ),
                team("infra", fairshare=40, users=["alice"], default_qos="normal"),
            ],
            qos=[
                {
                    "name": "high",
                    "priority": 100,
                    "max_wall_minutes": 1440,
                    "max_tres_per_user": {"gres/gpu": 16, "gres/gpu:h100": 16, "cpu": 512},
                    "grp_tres": {"node": 8},
                }
            ],
            keep_job_records_months=12,
        )
    )
    data["users"] = [{"name": "alice", "uid": 2001}, {"name": "bob", "uid": 2002}]
    data["login_pools"] = [{"name": "login", "instance_type": "m7i.2xlarge"}]
    assert findings(data) == []


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"accounts": [{"name": "ML"}]}, "expected a"),
        ({"accounts": [{"name": "ml", "users": ["Alice"]}]}, "expected a"),
        ({"qos": [{"name": "q", "grp_tres": {"gpu": 8}}]}, "expected a"),
        ({"database": {"type": "postgres"}}, "is not one of local, external, rds"),
        ({"accounts": [{"name": "ml", "fairshare": 0}]}, "greater than or equal to 1"),
        ({"accounts": [{"name": "ml", "description": 'say "hi"'}]}, "without quotes"),
    ],
)
def test_structure_is_refused_with_its_path(value: dict[str, Any], fragment: str) -> None:
    from slurmstack.validate import validate_object

    result = validate_object(definition(accounting(**value)), source="test")
    assert result.spec is None
    assert any(f.path.startswith(A) and fragment in f.message for f in result.findings), [
        f.line() for f in result.findings
    ]
