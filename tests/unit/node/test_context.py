"""The Context: the node's contract files read through the contract's readers, typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack.contract import (
    BOOTSTRAP_ENV_PATH,
    NODE_CONFIG_PATH,
    NODE_ENV_PATH,
    DeployParameter,
    NodeEnv,
    bootstrap_env_text,
)
from slurmstack.node.context import AgentError, Context
from slurmstack.render import bootstrap_env, role_files
from support.examples import example_plan

PLAN = example_plan("p5-training")


def test_a_node_without_its_files_says_which_is_missing(tmp_path: Path) -> None:
    ctx = Context(root=tmp_path)
    with pytest.raises(AgentError, match=r"bootstrap\.env is missing"):
        ctx.bootstrap_env()
    with pytest.raises(AgentError, match=r"node\.json is missing"):
        ctx.config()
    assert ctx.node_env() == NodeEnv()


def test_the_rendered_files_read_back_typed(tmp_path: Path) -> None:
    ctx = Context(root=tmp_path)
    ctx.path(BOOTSTRAP_ENV_PATH).parent.mkdir(parents=True)
    ctx.path(BOOTSTRAP_ENV_PATH).write_text(bootstrap_env_text(bootstrap_env(PLAN, "train")))
    ctx.path(NODE_CONFIG_PATH).write_text(role_files(PLAN, "train")[NODE_CONFIG_PATH])
    assert ctx.bootstrap_env().role == "train"
    head = DeployParameter.HEAD_ADDRESS
    assert ctx.parameter_name(head) == PLAN.parameter(head)
    config = ctx.config()
    assert config.node_name_prefix == "train-" and config.health.gpus == 8
    ctx.write_node_env(NodeEnv(address="10.42.7.19", node_name="train-1811"))
    assert ctx.path(NODE_ENV_PATH).read_text() == (
        "SLURMSTACK_ADDRESS=10.42.7.19\nSLURMSTACK_NODE_NAME=train-1811\n"
    )
    assert ctx.node_env().node_name == "train-1811"


def test_a_bootstrap_env_missing_a_variable_is_named(tmp_path: Path) -> None:
    ctx = Context(root=tmp_path)
    ctx.path(BOOTSTRAP_ENV_PATH).parent.mkdir(parents=True)
    ctx.path(BOOTSTRAP_ENV_PATH).write_text("SLURMSTACK_REGION=us-east-1\n")
    with pytest.raises(AgentError, match="SLURMSTACK_CLUSTER"):
        ctx.bootstrap_env()
