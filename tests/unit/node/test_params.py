"""params and head-address: node.env, the node's name, /etc/hosts, and the head's address read
again before every slurmd start."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack import contract
from slurmstack.contract import DeployParameter
from slurmstack.node import cli
from slurmstack.node.boot import config_sync, mounts, params
from slurmstack.node.context import AgentError, Context
from slurmstack.render import SLURMD_UNIT_PATH, pool_files
from support.examples import example_plan
from support.node import PLAN, NoAws, Runner, make_node, publish_config, scratch_node


def test_params_waits_for_deploy_values_and_names_the_node(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    run = Runner()
    node = make_node(tmp_path, aws, "train", run=run)
    config_sync.sync_config(node, poll=0)
    ssm = aws.client("ssm")
    with pytest.raises(AgentError, match="head/address"):
        params.params(node, timeout=0, poll=0)
    for key, value in {
        DeployParameter.HEAD_ADDRESS: "10.42.0.10",
        DeployParameter.EFS_ID: "fs-0123456789abcdef0",
        DeployParameter.LUSTRE_DNS: "fs-1.fsx.us-east-1.amazonaws.com",
        DeployParameter.LUSTRE_MOUNT_NAME: "abcdefgh",
    }.items():
        ssm.put_parameter(Name=PLAN.parameter(key), Value=value, Type="String")
    env = params.params(node, poll=0)
    name = contract.node_name("train-", "10.42.7.19")
    assert env.node_name == name
    written = contract.parse_env((tmp_path / "etc/slurmstack/node.env").read_text())
    assert written["SLURMSTACK_HEAD_ADDRESS"] == "10.42.0.10"
    # File system names are the mounts' to wait for (the head's slurmctld does not wait).
    assert "SLURMSTACK_LUSTRE_MOUNT_NAME" not in written
    assert mounts.storage_env(node, poll=0).lustre_mount_name == "abcdefgh"
    written = contract.parse_env((tmp_path / "etc/slurmstack/node.env").read_text())
    assert written["SLURMSTACK_LUSTRE_MOUNT_NAME"] == "abcdefgh"
    assert written["SLURMSTACK_EFS_ID"] == "fs-0123456789abcdef0"
    hosts = (tmp_path / "etc/hosts").read_text()
    assert "10.42.0.10 llm-train-head" in hosts and f"10.42.7.19 {name}" in hosts
    assert ["hostnamectl", "set-hostname", name] in run.calls
    params.params(node, poll=0)  # idempotent: one slurmstack block in /etc/hosts
    assert (tmp_path / "etc/hosts").read_text().count(params.HOSTS_BEGIN) == 1
    # ... and keeps what mounts recorded.
    assert contract.parse_env((tmp_path / "etc/slurmstack/node.env").read_text()) == written


def worker_with_env(tmp_path: Path, session, head: str | None = "10.42.0.10") -> Context:
    node = scratch_node(tmp_path, session, Runner())
    env = tmp_path / "etc/slurmstack/node.env"
    lines = ["SLURMSTACK_ADDRESS=10.42.7.19", "SLURMSTACK_NODE_NAME=train-1811"]
    if head:
        lines.append(f"SLURMSTACK_HEAD_ADDRESS={head}")
    env.write_text("\n".join(lines) + "\n")
    return node


def test_head_address_follows_the_parameter(aws, tmp_path: Path) -> None:
    node = worker_with_env(tmp_path, aws)
    ssm = aws.client("ssm")
    name = PLAN.parameter(DeployParameter.HEAD_ADDRESS)
    ssm.put_parameter(Name=name, Value="10.42.0.10", Type="String")
    assert params.head_address(node) == "10.42.0.10"
    assert not (tmp_path / "etc/hosts").exists()  # unchanged: nothing rewritten
    ssm.put_parameter(Name=name, Value="10.42.3.3", Type="String", Overwrite=True)
    # Within a boot the first reading stands (one Parameter Store call per boot) ...
    assert params.head_address(node) == "10.42.0.10"
    # ... a slurmd started later reads the parameter again.
    read_at = node.clock()
    node.clock = lambda: read_at + params.HEAD_ADDRESS_FRESH_SECONDS + 1
    assert cli.main(["head-address"], ctx=node) == 0
    env = contract.parse_env((tmp_path / "etc/slurmstack/node.env").read_text())
    assert env["SLURMSTACK_HEAD_ADDRESS"] == "10.42.3.3"
    assert env["SLURMSTACK_NODE_NAME"] == "train-1811"
    hosts = (tmp_path / "etc/hosts").read_text()
    assert "10.42.3.3 llm-train-head" in hosts and "10.42.7.19 train-1811" in hosts
    assert "10.42.0.10" not in hosts


def test_head_address_keeps_the_known_one_when_ssm_cannot_answer(aws, tmp_path: Path) -> None:
    node = worker_with_env(tmp_path, aws)
    node.session = NoAws()
    assert params.head_address(node) == "10.42.0.10"
    assert not (tmp_path / "etc/hosts").exists()
    # A node that never knew the address cannot start slurmd without it.
    (tmp_path / "etc/slurmstack/node.env").write_text("SLURMSTACK_NODE_NAME=train-1811\n")
    assert cli.main(["head-address"], ctx=node) == 1


def test_slurmd_reads_the_head_address_again_before_every_start() -> None:
    plan = example_plan("p5-training")
    unit = pool_files(plan, plan.pool("train"))[SLURMD_UNIT_PATH].splitlines()
    pre = [line for line in unit if line.startswith("ExecStartPre=")]
    assert pre[0] == "ExecStartPre=/usr/local/bin/slurmstack-node head-address"
    start = next(line for line in unit if line.startswith("ExecStart="))
    assert "--conf-server ${SLURMSTACK_HEAD_ADDRESS}:" in start
    # systemd reads EnvironmentFile= anew for ExecStart, after the ExecStartPre steps.
    assert "EnvironmentFile=/etc/slurmstack/node.env" in unit
