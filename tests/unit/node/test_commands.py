"""The table of subcommands: the contract's names, each once, each reachable from the command
line with its help."""

from __future__ import annotations

from slurmstack.contract import Command
from slurmstack.node import cli
from slurmstack.node.commands import COMMANDS, reference


def test_the_table_has_each_of_the_contract_s_commands_once() -> None:
    assert sorted(c.name for c in COMMANDS) == sorted(Command)


def test_the_command_line_and_its_help_come_from_the_table() -> None:
    parser = cli.parser()
    help_text = parser.format_help()
    takes_nodes = {Command.POWER_RESUME, Command.POWER_SUSPEND, Command.POWER_RESUME_FAIL}
    for command in COMMANDS:
        argv = [command.name.value] + (["gpu-e[1-2]"] if command.name in takes_nodes else [])
        assert parser.parse_args(argv).command == command.name.value
        assert f"{command.name.value:<13} {command.help}" in help_text
    assert reference() in help_text


def test_reap_takes_its_options() -> None:
    args = cli.parser().parse_args(["reap", "--grace", "5", "--dry-run", "--no-ec2"])
    assert (args.grace, args.dry_run, args.no_ec2) == (5.0, True, True)
