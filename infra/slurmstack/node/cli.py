"""slurmstack-node: the agent that configures a slurmstack node at boot.

A package of small modules (Python 3 standard library and boto3), installed from the cluster's
config store by the bootstrap in the node's cloud-init document, with the contract it shares
with the control plane. Its subcommands are the table in slurmstack.node.commands.

Every filesystem path goes through --root (default /), so tests run on fake device trees.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..contract import EXIT_RETRYABLE, HEAD_ROLE, is_retryable
from . import active
from .commands import COMMANDS, reference
from .context import AgentError, Context, log
from .subcommand import Subcommand


def parser() -> argparse.ArgumentParser:
    described = argparse.ArgumentParser(
        prog="slurmstack-node",
        description=__doc__.split("\n")[0],
        epilog="subcommands:\n" + reference(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    described.add_argument("--root", default=os.environ.get("SLURMSTACK_ROOT", "/"))
    sub = described.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.arguments(sub.add_parser(command.name.value, help=command.help))
    return described


def main(argv: list[str] | None = None, ctx: Context | None = None) -> int:
    args = parser().parse_args(argv)
    ctx = ctx or Context(root=Path(args.root))
    chosen = next(c for c in COMMANDS if c.name.value == args.command)
    wrong_place = misplaced(ctx, chosen)
    if wrong_place:
        log(f"{args.command}: {wrong_place}")
        return 2
    try:
        standby = chosen.once_per_cluster and active.standby_reason(ctx)
        if standby:
            log(f"{args.command}: not run here: {standby}")
            return 0
        return chosen.run(ctx, args)
    except AgentError as exc:
        log(f"{args.command}: {exc}")
        return 1
    except Exception as exc:
        if not is_retryable(exc):
            raise
        # Throttled (or not yet consistent) past the client's own retries: the caller (the
        # first-boot script, a timer) runs the step again later.
        log(f"{args.command}: AWS said not now: {exc}")
        return EXIT_RETRYABLE


def misplaced(ctx: Context, command: Subcommand) -> str | None:
    """Why ``command`` may not run on this node (its ``where`` against the role bootstrap.env
    names), or None. A node whose role cannot be read (no bootstrap.env, or one a job user may
    not read) runs it, and the command meets what it lacks itself."""
    if command.where == "any":
        return None
    try:
        role = ctx.bootstrap_env().role
    except (AgentError, OSError):
        return None
    if command.where == "head" and role != HEAD_ROLE:
        return f"runs on the head node only; this is a node of pool {role}"
    if command.where == "worker" and role == HEAD_ROLE:
        return "runs on a pool's node only; this is the head node"
    return None


if __name__ == "__main__":
    sys.exit(main())
