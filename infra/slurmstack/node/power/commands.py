"""The power room's subcommands: each prepares the environment slurmctld does not give it
(power.environment), runs its step and prints what happened as JSON."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from ...contract import Command
from ..context import Context, log
from ..subcommand import Handler, Subcommand
from . import environment, launch_check, resume, suspend, sweep


def hostlist_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("hostlist", help="the nodes, as a Slurm hostlist (e.g. gpu-e[1-4])")


def power_program(step: Callable[[Context, str], dict[str, object]], program: str) -> Handler:
    """A program slurmctld runs: its environment first (power.environment), then the step."""

    def run(ctx: Context, args: argparse.Namespace) -> int:
        environment.prepare(ctx, program)
        result = step(ctx, args.hostlist)
        log(f"{program}: {json.dumps(result, sort_keys=True)}")
        print(json.dumps(result, sort_keys=True))
        return 0

    return run


def sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print what would be done")


def power_sweep(ctx: Context, args: argparse.Namespace) -> int:
    environment.prepare(ctx, Command.POWER_SWEEP.value)
    result = sweep.sweep(ctx, dry_run=args.dry_run)
    if result["returned"] or result["terminated"]:
        log(f"{Command.POWER_SWEEP.value}: {json.dumps(result, sort_keys=True)}")
    print(json.dumps(result, sort_keys=True))
    return 0


def check_launches(ctx: Context, _args: argparse.Namespace) -> int:
    """Never fails the boot: a refused pool is an event, its nodes DOWN with the reason."""
    print(json.dumps(launch_check.launch_check(ctx), sort_keys=True))
    return 0


COMMANDS = (
    Subcommand(
        Command.POWER_RESUME,
        "(slurm.conf's ResumeProgram, run by slurmctld as SlurmUser) launch the elastic "
        "nodes of the hostlist: each exclusive multi-node job's (SLURM_RESUME_FILE) all or "
        "nothing, the rest best effort, in EC2 Fleets of type instant from the pools' launch "
        "templates; name each launch's instances in one object of the bucket, set their "
        "addresses in Slurm; nodes that get none go DOWN with EC2's error (slurmstack:launch: "
        "...) and their pool waits",
        power_program(resume.resume, Command.POWER_RESUME.value),
        hostlist_argument,
        where="head",
    ),
    Subcommand(
        Command.POWER_SUSPEND,
        "(SuspendProgram) terminate the instances of the elastic nodes of the hostlist",
        power_program(suspend.suspend, Command.POWER_SUSPEND.value),
        hostlist_argument,
        where="head",
    ),
    Subcommand(
        Command.POWER_RESUME_FAIL,
        "(ResumeFailProgram) terminate the instances of elastic nodes that did not "
        "register within ResumeTimeout; their pool waits before it launches again",
        power_program(suspend.resume_fail, Command.POWER_RESUME_FAIL.value),
        hostlist_argument,
        where="head",
    ),
    Subcommand(
        Command.POWER_SWEEP,
        "(as SlurmUser) return to service the powered-down elastic nodes a failed launch "
        "(once their pool's retry is due), a health check or Slurm took out; terminate "
        "instances no elastic node owns; run every minute by slurmstack-power.timer",
        power_sweep,
        sweep_arguments,
        where="head",
        once_per_cluster=True,
    ),
    Subcommand(
        Command.LAUNCH_CHECK,
        "(at boot) dry-run the EC2 Fleet launch of one node per elastic pool, tags included: a "
        "pool the head may not launch is an event (events.log) and its nodes go DOWN with "
        "EC2's refusal as their reason",
        check_launches,
        where="head",
    ),
)
