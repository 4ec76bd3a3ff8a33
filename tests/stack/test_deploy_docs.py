"""docs/deploying.md ("Deploying for real") stays true to the program: every AWS service the program
creates resources of (for the examples and a team's login pool behind its load balancer) is in
the deployer's IAM table, and the documented commands exist."""

from __future__ import annotations

import re

import pytest

from stack.test_login_pools import OFFICE, team
from support.stack import EXAMPLE_IDS, REPO, example, run_ok

pytestmark = pytest.mark.stack

# The IAM prefix of each pulumi-aws module the program uses.
IAM_PREFIX = {
    "autoscaling": "autoscaling",
    "budgets": "budgets",
    "cloudwatch": "logs",
    "sns": "sns",
    "ebs": "ec2",
    "ec2": "ec2",
    "vpc": "ec2",
    "efs": "elasticfilesystem",
    "fsx": "fsx",
    "iam": "iam",
    "kms": "kms",
    "imagebuilder": "imagebuilder",
    "lb": "elasticloadbalancing",
    "s3": "s3",
    "secretsmanager": "secretsmanager",
    "ssm": "ssm",
}
# Types whose IAM prefix is not their module's (pulumi-aws's cloudwatch module holds both).
TYPE_PREFIX = {"aws:cloudwatch/metricAlarm:MetricAlarm": "cloudwatch"}


def _section(title: str) -> str:
    text = (REPO / "docs" / "deploying.md").read_text()
    assert text.startswith(title), "docs/deploying.md is the guide to deploying"
    return text


def test_the_iam_table_names_every_service_the_program_uses() -> None:
    table = _section("# Deploying for real")
    listed = set(re.findall(r"^\| `([a-z0-9]+)` \|", table, re.M))
    used = set()
    definitions = [example(stem) for stem in EXAMPLE_IDS]
    definitions.append(team(ssh_cidrs=[OFFICE], load_balancer=True))
    for definition in definitions:
        for resource in run_ok(definition).custom:
            provider, module = resource.type.split(":")[:2]
            if provider == "aws":
                module = module.split("/")[0]
                assert module in IAM_PREFIX, f"no IAM prefix known for {resource.type}"
                used.add(TYPE_PREFIX.get(resource.type, IAM_PREFIX[module]))
    assert used <= listed, f"docs/deploying.md's IAM table lacks {sorted(used - listed)}"


def test_the_deploy_steps_name_the_uv_environment_and_the_stack_file() -> None:
    steps = _section("# Deploying for real")
    assert "toolchain: uv" in steps and "virtualenv: .venv" in steps
    assert "uv run slurmstack validate Pulumi.prod.yaml" in steps
    assert "pulumi install" in steps and "Running On-Demand P instances" in steps


def test_forcing_tcp_is_documented_where_the_refusal_points() -> None:
    from slurmstack.checks.nccl import FORCE_TCP_HINT

    assert "docs/deploying.md: forcing TCP" in FORCE_TCP_HINT
    page = _section("# Deploying for real")
    section = page[page.index("**Forcing TCP to debug the fabric.**") :]
    assert "NCCL_NET=Socket" in section and "srun" in section
