"""docs/deploying.md stays true to the program: every AWS service the program
creates resources of is in the deployer's IAM table, and the documented commands exist."""

from __future__ import annotations

import re

import pytest

from helpers_stack import EXAMPLE_IDS, REPO, example, run_ok

pytestmark = pytest.mark.stack

# The IAM prefix of each pulumi-aws module the program uses.
IAM_PREFIX = {
    "autoscaling": "autoscaling",
    "cloudwatch": "logs",
    "ebs": "ec2",
    "ec2": "ec2",
    "vpc": "ec2",
    "efs": "elasticfilesystem",
    "fsx": "fsx",
    "iam": "iam",
    "imagebuilder": "imagebuilder",
    "s3": "s3",
    "secretsmanager": "secretsmanager",
    "ssm": "ssm",
}


def _section(title: str) -> str:
    # The guide moved out of the README into docs/ (issue 22).
    text = (REPO / "docs" / "deploying.md").read_text()
    start = text.index(title)
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_the_iam_table_names_every_service_the_program_uses() -> None:
    table = _section("# Deploying for real")
    listed = set(re.findall(r"^\| `([a-z0-9]+)` \|", table, re.M))
    used = set()
    for stem in EXAMPLE_IDS:
        for resource in run_ok(example(stem)).custom:
            provider, module = resource.type.split(":")[:2]
            if provider == "aws":
                module = module.split("/")[0]
                assert module in IAM_PREFIX, f"no IAM prefix known for {resource.type}"
                used.add(IAM_PREFIX[module])
    assert used <= listed, f"README's IAM table lacks {sorted(used - listed)}"


def test_the_deploy_steps_name_the_uv_environment_and_the_stack_file() -> None:
    steps = _section("# Deploying for real")
    assert "toolchain: uv" in steps and "virtualenv: .venv" in steps
    assert "uv run slurmstack validate Pulumi.prod.yaml" in steps
    assert "pulumi install" in steps and "Running On-Demand P instances" in steps


def test_forcing_tcp_is_documented_where_the_refusal_points() -> None:
    from slurmstack.checks.nccl import FORCE_TCP_HINT

    assert "docs/deploying.md: forcing TCP" in FORCE_TCP_HINT
    section = _section("**Forcing TCP to debug the fabric.**")
    assert "NCCL_NET=Socket" in section and "srun" in section
