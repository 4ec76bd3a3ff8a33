"""Accounting in the Pulumi program (offline engine, preview=False): the password secret the
stack generates, an RDS database when the definition asks for one, and nothing for an external
database or with accounting off."""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

import pytest

from support.stack import (
    T_PARAM,
    T_PASSWORD,
    T_SECRET,
    T_SECRET_VERSION,
    T_SG,
    plan_of,
    run_ok,
    small_cluster,
    user_data_texts,
)

pytestmark = pytest.mark.stack

T_RDS = "aws:rds/instance:Instance"
T_SUBNET = "aws:ec2/subnet:Subnet"
T_SUBNET_GROUP = "aws:rds/subnetGroup:SubnetGroup"
T_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
T_DB_PARAMS = "aws:rds/parameterGroup:ParameterGroup"


def with_accounting(accounting: dict[str, Any], **storage: Any) -> dict[str, Any]:
    definition = small_cluster()
    definition["slurm"] = {"accounting": accounting}
    definition["storage"].update(storage)
    return definition


def test_rds_database_is_private_encrypted_and_reached_from_the_head_only() -> None:
    definition = with_accounting({"database": {"type": "rds", "instance_class": "db.t4g.small"}})
    plan = plan_of(definition)
    result = run_ok(definition)
    db = result.one(T_RDS)
    inputs = db.inputs
    assert inputs["engine"] == "mariadb" and inputs["engineVersion"] == "10.11"
    assert inputs["instanceClass"] == "db.t4g.small" and inputs["storageEncrypted"] is True
    assert inputs["publiclyAccessible"] is False
    assert inputs["username"] == "slurm" and inputs["dbName"] == "slurm_acct_db"
    # Protected by default, with a final snapshot whose name a re-created cluster does not
    # reuse: a random suffix made once with the instance (a new stack makes a new one).
    assert db.options.protect and inputs["deletionProtection"] is True
    assert inputs["skipFinalSnapshot"] is False
    (suffix,) = result.of_type("random:index/randomId:RandomId")
    assert re.fullmatch(r"[0-9a-f]{8}", suffix.outputs["hex"])
    assert inputs["finalSnapshotIdentifier"] == f"tiny-accounting-final-{suffix.outputs['hex']}"
    # The generated password, marked secret, is the one in the secret the head node reads.
    (password,) = result.of_type(T_PASSWORD)
    assert inputs["password"] == password.outputs["result"] and "password" in db.secret_inputs
    version = result.one(T_SECRET_VERSION, "tiny-accounting-db-password")
    assert version.inputs["secretString"] == password.outputs["result"]
    for name, text in user_data_texts(result).items():
        assert password.outputs["result"] not in text, name
    assert password.outputs["result"] not in json.dumps(result.outputs)
    # Its firewall: MariaDB's port from the head node's group, nothing else.
    (group,) = [g for g in result.of_type(T_SG) if g.name == "tiny-accounting"]
    assert inputs["vpcSecurityGroupIds"] == [group.id]
    rules = [r for r in result.of_type(T_INGRESS) if r.inputs["securityGroupId"] == group.id]
    (rule,) = rules
    head_group = next(g for g in result.of_type(T_SG) if g.name == "tiny-head")
    assert (rule.inputs["fromPort"], rule.inputs["toPort"]) == (3306, 3306)
    assert rule.inputs["referencedSecurityGroupId"] == head_group.id
    # Two subnets of its own, in two zones, clear of the compute and public subnets.
    subnets = [s for s in result.of_type(T_SUBNET) if s.name.startswith("tiny-accounting-db-")]
    assert len(subnets) == 2
    assert {s.inputs["availabilityZone"] for s in subnets} == {"us-east-1a", "us-east-1b"}
    for subnet in subnets:
        cidr = ipaddress.IPv4Network(subnet.inputs["cidrBlock"])
        assert cidr.subnet_of(plan.vpc_cidr)  # type: ignore[arg-type]
        assert not cidr.overlaps(plan.compute_subnet_cidr)  # type: ignore[arg-type]
        assert not cidr.overlaps(plan.public_subnet_cidr)  # type: ignore[arg-type]
    assert sorted(result.one(T_SUBNET_GROUP).inputs["subnetIds"]) == sorted(s.id for s in subnets)
    lock_wait = {p["name"]: p["value"] for p in result.one(T_DB_PARAMS).inputs["parameters"]}
    assert lock_wait["innodb_lock_wait_timeout"] == "900"
    # Its address reaches the head node as the deploy parameter the agent waits for.
    param = next(p for p in result.of_type(T_PARAM) if p.inputs["name"].endswith("/db-host"))
    assert param.inputs["name"] == "/slurmstack/tiny/accounting/db-host"
    assert param.inputs["value"] == db.outputs["address"]


def test_rds_in_an_existing_vpc_uses_the_definitions_subnets() -> None:
    definition = with_accounting(
        {
            "database": {
                "type": "rds",
                "subnet_ids": ["subnet-0aaaaaaaaaaaaaaaa", "subnet-0bbbbbbbbbbbbbbbb"],
            }
        },
        protect=False,
    )
    definition["network"] = {
        "vpc_id": "vpc-0123456789abcdef0",
        "compute_subnet_id": "subnet-0123456789abcdef0",
        "compute_subnet_cidr": "10.1.0.0/20",
    }
    result = run_ok(definition)
    assert not [s for s in result.of_type(T_SUBNET) if "accounting" in s.name]
    assert result.one(T_SUBNET_GROUP).inputs["subnetIds"] == [
        "subnet-0aaaaaaaaaaaaaaaa",
        "subnet-0bbbbbbbbbbbbbbbb",
    ]
    db = result.one(T_RDS)
    assert not db.options.protect and db.inputs["skipFinalSnapshot"] is True


@pytest.mark.parametrize(
    "accounting",
    [
        {"enabled": False},
        {
            "database": {
                "type": "external",
                "host": "db.example.internal",
                "password_secret": "db/slurm",
            }
        },
    ],
    ids=["off", "external"],
)
def test_no_password_is_made_when_none_is_needed(accounting: dict[str, Any]) -> None:
    result = run_ok(with_accounting(accounting))
    assert not result.of_type(T_PASSWORD) and not result.of_type(T_RDS)
    assert [s.name for s in result.of_type(T_SECRET)] == ["tiny-munge-key"]
