"""Where the head node sits, as the program builds it and as the diagram draws it: in the
public subnet exactly when ssh_cidrs asks for SSH (plan.head_in_public_subnet)."""

from __future__ import annotations

import re

import pytest

from slurmstack.report.diagram import dot, mermaid
from support.stack import EXAMPLE_IDS, example, plan_of, run_ok

pytestmark = pytest.mark.stack

T_SUBNET = "aws:ec2/subnet:Subnet"


def _subgraph_of(node: str, text: str) -> str:
    """The innermost Mermaid subgraph that declares ``node``."""
    current: list[str] = []
    for line in text.splitlines():
        opened = re.match(r"\s*subgraph (\w+)\[", line)
        if opened:
            current.append(opened.group(1))
        elif line.strip() == "end":
            current.pop()
        elif re.match(rf"\s*{node}\[", line):
            return current[-1]
    raise AssertionError(f"{node} not declared")


@pytest.mark.parametrize("stem", EXAMPLE_IDS)
def test_the_diagram_puts_the_head_node_where_the_program_does(stem: str) -> None:
    definition = example(stem)
    plan, run = plan_of(definition), run_ok(definition)
    # The head's address, and so its subnet, is its own network interface's.
    head = run.one("aws:ec2/networkInterface:NetworkInterface")
    subnets = {r.outputs.get("id") or r.id: r.name for r in run.of_type(T_SUBNET)}
    in_public = subnets.get(head.inputs["subnetId"], "").endswith("-public")
    assert in_public is plan.head_in_public_subnet
    assert _subgraph_of("head", mermaid(plan)) == ("public" if in_public else "compute")


def test_ssh_puts_the_head_node_in_the_public_subnet_of_an_existing_vpc() -> None:
    definition = example("p5-training")
    definition["network"] = {
        "vpc_id": "vpc-0123456789abcdef0",
        "compute_subnet_id": "subnet-0123456789abcdef0",
        "compute_subnet_cidr": "10.0.0.0/16",
        "public_subnet_id": "subnet-0fedcba9876543210",
        "ssh_cidrs": ["198.51.100.0/24"],
    }
    plan = plan_of(definition)
    assert plan.head_in_public_subnet
    text = mermaid(plan)
    assert _subgraph_of("head", text) == "public"
    assert 'subgraph public["public subnet subnet-0fedcba9876543210"]' in text
    assert "SSH from 198.51.100.0/24" in text
    assert "head -> nat" not in dot(plan)
    head = run_ok(definition).one("aws:ec2/networkInterface:NetworkInterface")
    assert head.inputs["subnetId"] == "subnet-0fedcba9876543210"
