"""The health room's subcommands: the boot check, Slurm's HealthCheckProgram and the logs a
node copies to the bucket."""

from __future__ import annotations

import argparse
import json

from ...contract import Command
from .. import logs
from ..context import Context
from ..subcommand import Subcommand
from . import boot, periodic


def _health(ctx: Context, _args: argparse.Namespace) -> int:
    return 1 if boot.health(ctx) else 0


def _health_check(ctx: Context, _args: argparse.Namespace) -> int:
    return periodic.health_check(ctx)


def _ship_logs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--why", default="asked", help="recorded with the logs")


def _ship_logs(ctx: Context, args: argparse.Namespace) -> int:
    print(json.dumps({"written": logs.ship_logs(ctx, args.why)}))
    return 0


COMMANDS = (
    Subcommand(
        Command.HEALTH,
        "(before every slurmd start) the boot health check: GPU, Neuron and EFA "
        "devices present, nvidia-smi answering for every GPU with no ECC error pending, EFA "
        "ports ACTIVE, shared file systems answering; on the instance's first boot DCGM's "
        "diagnostic. On failure: logs to the bucket, the instance marked Unhealthy in its Auto "
        "Scaling group, exit non-zero (slurmd never starts)",
        _health,
        where="worker",
    ),
    Subcommand(
        Command.HEALTH_CHECK,
        "(Slurm's HealthCheckProgram, every HealthCheckInterval) the cheap checks, new "
        "critical XIDs in the kernel log, file systems, full volumes, EC2's spot notice: a "
        "finding drains the node with `slurmstack:<check>: <detail>` and copies its logs to the "
        "bucket; a terminating instance copies its logs",
        _health_check,
        where="worker",
    ),
    Subcommand(
        Command.SHIP_LOGS,
        "copy this node's boot, health and slurmd logs to the cluster bucket, under "
        "logs/<pool>/<instance ARN>/",
        _ship_logs,
        _ship_logs_arguments,
        where="worker",
    ),
)
