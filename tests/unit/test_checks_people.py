"""Rules in slurmstack.checks.people: each case triggers exactly its rule, with path and fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from slurmstack.checks.ssh_keys import ssh_key_problem
from slurmstack.findings import Level
from support.checks import Case, both, check_case, definition, findings, set_in

# Real public keys (made with ssh-keygen for these tests; their private halves were deleted).
ED25519 = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO7iLqfLTqwIksZZDY/0oryFx67yVKkT4qRpxyZsjSPy alice@laptop"
)
ECDSA = (
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBJGOQT5Cd7ac2SgtPTye"
    "iMvO6WtLwuzJnlUtUgNgZpcZZwvPQCJD0GwCUe6UzGjKdna4EvaverJ0SpTF9JO7T5E= bob@desk"
)
CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def people(**values: Any) -> Any:
    """The base definition with a login pool, two groups and alice and bob."""

    def mutate(data: dict[str, Any]) -> None:
        data["login_pools"] = [{"name": "login", "instance_type": "m7i.2xlarge", "count": 2}]
        data["groups"] = [{"name": "research", "gid": 3000}, {"name": "gpu", "gid": 3001}]
        data["users"] = [
            {"name": "alice", "uid": 2001, "ssh_keys": [ED25519], "admin": True},
            {
                "name": "bob",
                "uid": 2002,
                "group": "research",
                "groups": ["gpu"],
                "ssh_keys": [ECDSA],
            },
        ]
        data.update(values)

    return mutate


def user(index: int, **values: Any) -> Any:
    def mutate(data: dict[str, Any]) -> None:
        data["users"][index].update(values)

    return mutate


def with_people(*mutations: Any) -> Any:
    return both(people(), *mutations)


DIRECTORY = {
    "uris": ["ldaps://ldap.example.com"],
    "search_base": "dc=example,dc=com",
    "ca_certificate": CA,
}

CASES = [
    Case("user-duplicate", with_people(user(1, name="alice")), "users[1].name", "declared twice"),
    Case(
        "user-duplicate",
        with_people(user(1, uid=2001)),
        "users[1].uid",
        "uid 2001 is users[0]'s (alice) too",
        name="uid",
    ),
    Case(
        "people-id-range",
        with_people(user(1, uid=998)),
        "users[1].uid",
        "system's range",
    ),
    Case(
        "people-id-range",
        with_people(user(1, uid=1000)),
        "users[1].uid",
        "ubuntu",
        name="image",
    ),
    Case(
        "people-id-range",
        with_people(user(1, uid=64030)),
        "users[1].uid",
        "slurm (Debian",
        name="debian-slurm",
    ),
    Case(
        "people-id-range",
        with_people(set_in("groups.0.gid", 100)),
        "groups[0].gid",
        "groups take ids from 2000",
        name="group",
    ),
    Case(
        "group-duplicate",
        with_people(set_in("groups.1.gid", 3000)),
        "groups[1].gid",
        "gid 3000 is groups[0]'s (research)",
    ),
    Case(
        "group-duplicate",
        with_people(user(0, uid=3000)),
        "users[0].group",
        "personal group would take gid 3000",
        name="personal",
    ),
    Case(
        "user-group-unknown",
        with_people(user(1, groups=["gpus"])),
        "users[1].groups[0]",
        "did you mean 'gpu'",
    ),
    Case(
        "user-name-reserved",
        with_people(user(1, name="slurm")),
        "users[1].name",
        "daemons",
    ),
    Case(
        "user-ssh-key-form",
        with_people(user(0, ssh_keys=["ssh-ed25519 AAAAnotbase64!"])),
        "users[0].ssh_keys[0]",
        "does not decode",
    ),
    Case(
        "user-iam-principal-duplicate",
        with_people(
            user(0, iam_principal="arn:aws:iam::123456789012:role/alice"),
            user(1, iam_principal="arn:aws:iam::123456789012:role/alice"),
        ),
        "users[1].iam_principal",
        "already runs as alice",
    ),
    Case(
        "account-user-unknown",
        with_people(
            set_in("slurm.accounting.accounts", [{"name": "ml", "users": ["alice", "carol"]}])
        ),
        "slurm.accounting.accounts[0].users[1]",
        "'carol' is not declared under users",
    ),
    Case(
        "account-user-unknown",
        set_in("slurm.accounting.accounts", [{"name": "ml", "users": ["carol"]}]),
        "slurm.accounting.accounts[0].users[0]",
        "exists on no node",
        level=Level.WARNING,
        name="no-people",
    ),
    Case(
        "directory-tls",
        with_people(set_in("directory", {**DIRECTORY, "ca_certificate": None})),
        "directory.ca_certificate",
        "needs ca_certificate",
    ),
    Case(
        "directory-bind",
        with_people(set_in("directory", {**DIRECTORY, "bind_dn": "cn=sssd,dc=example,dc=com"})),
        "directory.bind_password_secret",
        "needs bind_password_secret",
    ),
    Case(
        "login-pool-name-duplicate",
        with_people(set_in("login_pools", [{"name": "login", "instance_type": "m7i.large"}] * 2)),
        "login_pools[1].name",
        "declared twice",
    ),
    Case(
        "login-pool-load-balancer",
        with_people(set_in("login_pools.0.load_balancer", True)),
        "login_pools[0].load_balancer",
        "ssh_cidrs",
    ),
    Case(
        "people-without-login-pool",
        with_people(set_in("login_pools", [])),
        "login_pools",
        "work on the head node",
        level=Level.WARNING,
    ),
    Case(
        "instance-type-unknown",
        with_people(set_in("login_pools.0.instance_type", "m7i.2xlarg")),
        "login_pools[0].instance_type",
        "unknown instance type",
        also=frozenset({"instance-type-form"}),
        name="login-pool",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


def test_people_with_login_pool_and_directory_have_no_finding() -> None:
    data = definition(
        with_people(
            set_in("slurm.accounting.accounts", [{"name": "ml", "users": ["alice", "bob"]}]),
            set_in(
                "directory",
                {
                    **DIRECTORY,
                    "bind_dn": "cn=sssd,dc=example,dc=com",
                    "bind_password_secret": "ldap/bind",
                    "admin_group": "hpc-admins",
                },
            ),
        )
    )
    assert findings(data) == []


def test_twelve_researchers_validate_cleanly() -> None:
    """The guide's cluster: twelve people in two groups, accounts naming them all."""
    names = [f"r{n:02d}" for n in range(12)]
    data = definition(
        people(
            users=[
                {"name": name, "uid": 2100 + n, "group": "research", "ssh_keys": [ED25519]}
                for n, name in enumerate(names)
            ],
            groups=[{"name": "research", "gid": 3000}],
        )
    )
    data["slurm"]["accounting"] = {"accounts": [{"name": "research", "users": names}]}
    assert findings(data) == []


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (ED25519, None),
        (ECDSA, None),
        ("ssh-ed25519", "expected '<type> <base64>"),
        ("ssh-dss AAAAB3NzaC1kc3MAAACBAP", "DSA keys"),
        ("rsa AAAA", "not an OpenSSH key type"),
        # An ed25519 blob announced as RSA: the line was edited by hand.
        ("ssh-rsa " + ED25519.split()[1], "its data is a ssh-ed25519 key"),
    ],
)
def test_ssh_key_lines(line: str, fragment: str | None) -> None:
    problem = ssh_key_problem(line)
    assert (problem is None) if fragment is None else (fragment in (problem or "")), problem


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"users": [{"name": "Alice", "uid": 2001}]}, "expected a Linux login name"),
        ({"users": [{"name": "alice", "uid": -1}]}, "greater than or equal to 0"),
        ({"groups": [{"name": "Research", "gid": 3000}]}, "expected a Linux group name"),
        ({"directory": {"uris": ["http://x"], "search_base": "dc=x"}}, "should match pattern"),
        ({"users": [{"name": "a", "uid": 2001, "iam_principal": "alice"}]}, "should match pattern"),
    ],
)
def test_structure_is_refused_with_a_path(value: dict[str, Any], fragment: str) -> None:
    from slurmstack.validate import validate_object

    data = definition()
    data.update(value)
    result = validate_object(data, source="test")
    assert result.spec is None
    assert any(fragment in f.message for f in result.findings), [f.line() for f in result.findings]


# The bad definitions, through `slurmstack validate` in a process: each one finding
# (an error at its path, saying what to do), exit 1, no traceback.
BAD_DEFINITIONS = {
    "uid-collision": (with_people(user(1, uid=2001)), "users[1].uid", "every user needs an id"),
    "system-uid": (with_people(user(1, uid=998)), "users[1].uid", "people take ids from 2000"),
    "unknown-user": (
        with_people(
            set_in("slurm.accounting.accounts", [{"name": "research", "users": ["alice", "carol"]}])
        ),
        "slurm.accounting.accounts[0].users[1]",
        "declare them",
    ),
    "malformed-key": (
        with_people(user(0, ssh_keys=["ssh-ed25519 AAAA!!notbase64"])),
        "users[0].ssh_keys[0]",
        "copy the whole line",
    ),
    "directory-without-ca": (
        with_people(
            set_in("directory", {k: v for k, v in DIRECTORY.items() if k != "ca_certificate"})
        ),
        "directory.ca_certificate",
        "the PEM of the CA",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_DEFINITIONS))
def test_each_bad_definition_gets_one_finding_from_validate(name: str, tmp_path: Path) -> None:
    mutate, path, fix = BAD_DEFINITIONS[name]
    file = tmp_path / f"{name}.yaml"
    file.write_text(yaml.safe_dump(definition(mutate)))
    done = subprocess.run(
        [sys.executable, "-m", "slurmstack.cli", "validate", str(file)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "infra")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in out, out
    assert f"{file}: invalid (1 error)" in out, out
    (finding,) = [line for line in out.splitlines() if line.startswith(f"{path}: ")]
    assert fix in finding, finding
