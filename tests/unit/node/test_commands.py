"""The table of subcommands: the contract's names, each once, each reachable from the command
line with its help."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from slurmstack.contract import HEAD_ROLE, Command, bootstrap_env_text
from slurmstack.node import cli
from slurmstack.node.commands import COMMANDS, reference
from slurmstack.node.context import Context
from slurmstack.render import bootstrap_env


def test_the_table_has_each_of_the_contract_s_commands_once() -> None:
    assert sorted(c.name for c in COMMANDS) == sorted(Command)


def test_the_command_line_and_its_help_come_from_the_table() -> None:
    parser = cli.parser()
    help_text = parser.format_help()
    takes_nodes = {Command.POWER_RESUME, Command.POWER_SUSPEND, Command.POWER_RESUME_FAIL}
    for command in COMMANDS:
        argv = [command.name.value] + (["gpu-e[1-2]"] if command.name in takes_nodes else [])
        assert parser.parse_args(argv).command == command.name.value
        assert f"{command.name.value:<17} [{command.where}] {command.help}" in help_text
    assert reference() in help_text


def test_reap_takes_its_options() -> None:
    args = cli.parser().parse_args(["reap", "--grace", "5", "--dry-run", "--no-ec2"])
    assert (args.grace, args.dry_run, args.no_ec2) == (5.0, True, True)


ROOMS = ("boot", "health", "controller", "power", "accounting", "people", "workload", "observe")


def test_every_subcommand_comes_from_one_room() -> None:
    """The table is the rooms' COMMANDS, each a Subcommand of the room that handles it."""
    from_rooms = [
        c for room in ROOMS for c in importlib.import_module(f"slurmstack.node.{room}").COMMANDS
    ]
    assert list(COMMANDS) == from_rooms


def _node(tmp_path: Path, role: str) -> Context:
    from support.examples import example_plan

    env = tmp_path / "etc/slurmstack/bootstrap.env"
    env.parent.mkdir(parents=True)
    env.write_text(bootstrap_env_text(bootstrap_env(example_plan("p5-training"), role)))
    return Context(root=tmp_path)


@pytest.mark.parametrize(
    ("role", "command", "refusal"),
    [
        ("train", Command.CONTROL, "runs on the head node only; this is a node of pool train"),
        ("train", Command.POWER_SWEEP, "runs on the head node only"),
        ("train", Command.ACCOUNTING_APPLY, "runs on the head node only"),
        (HEAD_ROLE, Command.HEALTH_CHECK, "runs on a pool's node only; this is the head node"),
        (HEAD_ROLE, Command.HEAD_ADDRESS, "runs on a pool's node only"),
    ],
)
def test_a_command_meant_for_the_other_role_is_refused_before_it_runs(
    tmp_path: Path, capsys, role: str, command: Command, refusal: str
) -> None:
    chosen = next(c for c in COMMANDS if c.name == command)
    ctx = _node(tmp_path, role)
    assert cli.misplaced(ctx, chosen) is not None
    assert cli.main([command.value], ctx) == 2
    assert f"{command.value}: {refusal}" in capsys.readouterr().err


def test_where_a_command_may_run_is_its_room_s_word() -> None:
    where = {c.name: c.where for c in COMMANDS}
    assert {n for n, w in where.items() if w == "head"} >= {
        Command.CONTROL,
        Command.REAP,
        Command.BREAKER,
        Command.STATE_VOLUME,
        Command.POWER_RESUME,
        Command.ACCOUNTING_DB,
        Command.USAGE,
    }
    assert where[Command.HEALTH_CHECK] == where[Command.HEAD_ADDRESS] == "worker"
    assert where[Command.SYNC_CONFIG] == where[Command.NODE_CHECK] == "any"


def test_a_node_whose_role_is_unknown_runs_the_command(tmp_path: Path) -> None:
    chosen = next(c for c in COMMANDS if c.name == Command.CONTROL)
    assert cli.misplaced(Context(root=tmp_path), chosen) is None
    assert cli.misplaced(_node(tmp_path, HEAD_ROLE), chosen) is None
