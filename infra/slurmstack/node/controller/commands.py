"""The controller room's subcommands: one pass of the head's day-2 loop, the pools' circuit
breakers, and the reaping of dead records on its own."""

from __future__ import annotations

import argparse
import json

from ...contract import REAPER_GRACE_SECONDS, Command
from ..context import Context
from ..subcommand import Subcommand
from . import images_prune, reap
from .full_save import full_save_at_boot
from .loop import breakers, control, reset_breaker


def _control_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print what a pass would do")


def _control(ctx: Context, args: argparse.Namespace) -> int:
    result = control(ctx, dry_run=args.dry_run)
    print(json.dumps(result, sort_keys=True))
    return 1 if any(not a.get("ok", True) for a in result.get("actions", [])) else 0


def _breaker_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("verb", nargs="?", choices=("status", "reset"), default="status")
    parser.add_argument("pool", nargs="?", help="the pool whose breaker to reset")


def _breaker(ctx: Context, args: argparse.Namespace) -> int:
    if args.verb == "reset":
        if not args.pool:
            print("breaker reset needs a pool: slurmstack-node breaker reset <pool>")
            return 2
        print(json.dumps(reset_breaker(ctx, args.pool), sort_keys=True))
    else:
        print(json.dumps(breakers(ctx), indent=1, sort_keys=True))
    return 0


def _reap_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--grace",
        type=float,
        default=REAPER_GRACE_SECONDS,
        help="seconds a node must have been DOWN (default %(default)s)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print what would be deleted")
    parser.add_argument(
        "--no-ec2", action="store_true", help="skip the check against the cluster's instances"
    )


def _reap(ctx: Context, args: argparse.Namespace) -> int:
    result = reap.reap(ctx, grace=args.grace, ec2=not args.no_ec2, dry_run=args.dry_run)
    print(json.dumps(result, sort_keys=True))
    return 1 if result["failed"] else 0


def _full_save(ctx: Context, _args: argparse.Namespace) -> int:
    missing = full_save_at_boot(ctx)
    print(json.dumps({"asked": missing is not None, "missing": missing or []}, sort_keys=True))
    return 0


COMMANDS = (
    Subcommand(
        Command.REAP,
        "delete the records of dead dynamic nodes: a replaced instance registers under "
        "a new name and the old record would stay DOWN for ever. Only nodes of the cluster's "
        "pools that slurmctld itself marked DOWN and not responding (or the controller, its "
        "instance gone), with no job, longer than the grace period ago, and no live instance "
        "of the cluster at their address; every controller pass does the same",
        _reap,
        _reap_arguments,
        where="head",
    ),
    Subcommand(
        Command.CONTROL,
        "(slurmstack-controller.timer, every minute) one pass of the controller: nodes "
        "rebooted, replaced or left by their reason, a node whose instance is gone set DOWN, "
        "Capacity Blocks drained before their end, terminating instances drained and let go "
        "once their jobs end, dead records deleted, a full state save asked for while a core "
        "state file is missing; each action in the controller's log",
        _control,
        _control_arguments,
        where="head",
        once_per_cluster=True,
    ),
    Subcommand(
        Command.BREAKER,
        "the pools' circuit breakers: `breaker` shows them, `breaker reset <pool>` "
        "closes one (automatic replacement resumes)",
        _breaker,
        _breaker_arguments,
        where="head",
    ),
    Subcommand(
        Command.FULL_SAVE,
        "(at boot, after slurmctld, and every controller pass) ask slurmctld for a full state "
        "save (scontrol reconfigure) while a core state file is missing: from Slurm 25.05 a "
        "controller that died before its first full save, 5 minutes after a new cluster's "
        "start, could not start again",
        _full_save,
        where="head",
        once_per_cluster=True,
    ),
    images_prune.COMMAND,
)
