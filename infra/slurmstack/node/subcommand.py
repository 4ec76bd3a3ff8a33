"""The one shape of an agent subcommand: every room (boot, health, controller, power,
accounting, workload) exports its own as ``COMMANDS``, a tuple of Subcommand; the command line
(slurmstack.node.cli) is built from them (slurmstack.node.commands puts them together)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ..contract import Command
from .context import Context

Handler = Callable[[Context, argparse.Namespace], int]
Arguments = Callable[[argparse.ArgumentParser], None]
# Where a subcommand may run: the head node, a pool's node (a worker), or either. The command
# line refuses a head-only subcommand on a worker and a worker-only one on the head.
Where = Literal["head", "worker", "any"]


def no_arguments(_parser: argparse.ArgumentParser) -> None:
    return None


@dataclass(frozen=True)
class Subcommand:
    name: Command
    help: str
    run: Handler
    arguments: Arguments = no_arguments
    where: Where = "any"
    # With a backup controller: run only on the controller in control (slurmstack.node.active).
    once_per_cluster: bool = False


def step(run: Callable[[Context], object]) -> Handler:
    """A step whose success is its return without an AgentError."""

    def handler(ctx: Context, _args: argparse.Namespace) -> int:
        run(ctx)
        return 0

    return handler
