"""`slurmstack plan` and `slurmstack diagram` for a cluster a team uses: the people section (how
many users and groups, the admins, the login pools and the way in, Session Manager's Run As
tags), each login pool's cost lines in the total, its resources, and the diagram's login node."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from slurmstack.catalog import load_catalog
from slurmstack.report.cost import service_prices
from slurmstack.report.diagram import mermaid
from support.stack import plan_of

REPO = Path(__file__).resolve().parents[2]
OFFICE = "203.0.113.0/24"
ALICE_ROLE = "arn:aws:iam::123456789012:role/alice"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "infra")}
    return subprocess.run(
        [sys.executable, "-m", "slurmstack.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )


def team_definition() -> dict[str, Any]:
    """docs/people-and-login-nodes.md's cluster: twelve researchers in two accounts, alice an
    admin with a Session Manager principal, one login pool with direct SSH through a balancer."""
    data: dict[str, Any] = yaml.safe_load((REPO / "examples" / "p5-training.yaml").read_text())
    data["login_pools"] = [
        {
            "name": "login",
            "instance_type": "m7i.2xlarge",
            "count": 2,
            "ssh_cidrs": [OFFICE],
            "load_balancer": True,
        }
    ]
    data["groups"] = [{"name": "research", "gid": 3000}, {"name": "gpu-users", "gid": 3001}]
    names = ["alice", "bob", *(f"r{n:02d}" for n in range(3, 13))]
    data["users"] = [
        {"name": name, "uid": 2001 + index, "group": "research"} for index, name in enumerate(names)
    ]
    data["users"][0].update(admin=True, groups=["gpu-users"], iam_principal=ALICE_ROLE)
    data["slurm"]["accounting"]["accounts"] = [
        {"name": "research", "fairshare": 70, "users": names[:6]},
        {"name": "vision", "fairshare": 30, "users": names[6:]},
    ]
    return data


@cache
def planned(path: str) -> tuple[dict[str, Any], str]:
    """plan --json and the console report of the definition in ``path``."""
    done = _cli("plan", path, "--json")
    assert done.returncode == 0, done.stderr
    text = _cli("plan", path)
    assert text.returncode == 0, text.stderr
    return json.loads(done.stdout), text.stdout


@pytest.fixture(scope="module")
def team_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("people") / "team.yaml"
    path.write_text(yaml.safe_dump(team_definition()))
    return path


def test_plan_shows_the_people_and_the_way_in(team_file: Path) -> None:
    document, text = planned(str(team_file))
    people = document["people"]
    assert (people["users"], people["groups"]) == (12, 2)
    assert people["admins"] == ["alice"] and people["locked_users"] == []
    assert people["login_pools"] == [
        {
            "name": "login",
            "instance_type": "m7i.2xlarge",
            "count": 2,
            "ssh_cidrs": [OFFICE],
            "load_balancer": True,
        }
    ]
    assert "AWS-StartSSHSession" in people["way_in"]
    assert "direct SSH to login from its ssh_cidrs" in people["way_in"]
    assert people["run_as_tags"] == [{"principal": ALICE_ROLE, "tag": "SSMSessionRunAs=alice"}]
    # The console says the same.
    assert "People: 12 users, 2 groups" in text
    row = next(line for line in text.splitlines() if re.match(r"login\s+2\s", line))
    assert "m7i.2xlarge" in row and OFFICE in row and "(load balancer)" in row
    assert "the way in: SSH with their own key to a login node" in text
    # The resources the stack makes for the pool are in the plan.
    names = {(r["type"], r["name"]) for r in document["resources"]}
    for kind in (
        "aws:autoscaling/group:Group",
        "aws:ec2/launchTemplate:LaunchTemplate",
        "aws:secretsmanager/secret:Secret",
        "aws:lb/loadBalancer:LoadBalancer",
        "aws:iam/role:Role",
    ):
        assert (kind, "llm-train-login-login") in names, kind


def test_a_login_pool_costs_its_instances_volumes_and_host_key(team_file: Path) -> None:
    document, text = planned(str(team_file))
    lines = {line["item"]: line for line in document["cost"]["lines"]}
    price = load_catalog().instances["m7i.2xlarge"].price
    assert price is not None
    instances = lines["login pool login: 2 × m7i.2xlarge"]
    assert instances["hourly_usd"] == pytest.approx(2 * price.usd_per_hour, abs=1e-3)
    # 200 GiB gp3 root volumes with 250 MiB/s (125 above the included) at the price table's
    # GB-month and MiB/s-month, over a 720-hour month.
    prices = {
        k: v["value"] for k, v in service_prices().items() if isinstance(v, dict) and "value" in v
    }
    volumes = lines["login pool login: root volumes"]
    per_volume = (
        200 * prices["gp3_usd_per_gb_month"] + 125 * prices["gp3_usd_per_mibps_month_above_125"]
    )
    assert volumes["hourly_usd"] == pytest.approx(2 * per_volume / 720, abs=1e-3)
    secret = lines["login pool login: host key secret"]
    assert secret["hourly_usd"] == pytest.approx(prices["secret_usd_per_month"] / 720, abs=1e-4)
    # The balancer: its NLB-hour and the one public address of its subnet, each with a source;
    # its capacity units are billed by use.
    balancer = lines["login pool login: load balancer"]
    assert balancer["hourly_usd"] == pytest.approx(
        prices["nlb_usd_per_hour"] + prices["public_ipv4_usd_per_hour"], abs=1e-6
    )
    assert "elasticloadbalancing/pricing" in balancer["source"]
    assert "vpc/pricing" in balancer["source"]
    usage = {u["item"]: u for u in document["cost"]["usage_billed"]}
    assert (
        "elasticloadbalancing/pricing"
        in usage["login load balancer capacity units (NLCU)"]["source"]
    )
    assert "login pool login: 2 × m7i.2xlarge" in text
    # The pool's lines are in the total: the same cluster without people costs that much less.
    bare = copy.deepcopy(team_definition())
    for key in ("login_pools", "users", "groups"):
        del bare[key]
    bare["slurm"]["accounting"]["accounts"] = []
    path = team_file.parent / "bare.yaml"
    path.write_text(yaml.safe_dump(bare))
    without, _ = planned(str(path))
    login_hourly = sum(v["hourly_usd"] for k, v in lines.items() if k.startswith("login pool "))
    delta = document["cost"]["hourly_usd"] - without["cost"]["hourly_usd"]
    assert delta == pytest.approx(login_hourly, abs=0.02)
    assert without["people"]["way_in"].startswith("no login pool: operators only")


def test_the_diagram_draws_the_login_pool_and_what_it_reaches() -> None:
    plan = plan_of(team_definition())
    text = mermaid(plan)
    assert "login pool login" in text and "2 × m7i.2xlarge" in text
    assert "sackd · sshd · 12 users" in text and OFFICE in text
    edges = {
        (src, label.strip('"'), dst)
        for src, label, dst in re.findall(r"^\s+(\w+) <?-->\|([^|]*)\| (\w+)$", text, re.M)
    }
    login = "login_login"
    assert (login, "slurmctld 6817 · slurmdbd 6819", "head") in edges
    srun = [dst for src, label, dst in edges if src == login and label == "srun"]
    assert len(srun) == len(plan.pools) == 2 and "head" not in srun
    mounts = [dst for src, label, dst in edges if src == login and label == "mount"]
    assert len(mounts) == 2  # FSx for Lustre and EFS /home
