"""The agent's subcommands: every room's ``COMMANDS``, in one table. The command line
(slurmstack.node.cli) and its help are built from it; the names are the contract's
(slurmstack.contract.Command), which the units, cloud-init and SSM documents call. A new
subcommand is one Subcommand in its room's ``commands`` module."""

from __future__ import annotations

from . import accounting, boot, controller, health, observe, people, power, workload
from .subcommand import Subcommand

COMMANDS: tuple[Subcommand, ...] = (
    *boot.COMMANDS,
    *health.COMMANDS,
    *controller.COMMANDS,
    *power.COMMANDS,
    *accounting.COMMANDS,
    *people.COMMANDS,
    *workload.COMMANDS,
    *observe.COMMANDS,
)


def reference() -> str:
    """The subcommands, where each runs and what it does, as the command line's help lists them."""
    return "\n".join(f"  {c.name.value:<17} [{c.where}] {c.help}" for c in COMMANDS)
