"""The agent's subcommands: one table, name -> handler and help. The command line
(slurmstack.node.cli) and its help are built from it; the names are the contract's
(slurmstack.contract.Command), which the units, cloud-init and SSM documents call."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass

from ..contract import REAPER_GRACE_SECONDS, Command
from . import (
    accounting_db,
    associations,
    config_sync,
    controller,
    images_prune,
    join_hook,
    lnet,
    logs,
    mounts,
    munge,
    params,
    reaper,
    scratch,
    state_volume,
    usage,
)
from .context import Context, log
from .health import boot, periodic
from .power.handlers import POWER_ROWS
from .workload import commands as workload

Handler = Callable[[Context, argparse.Namespace], int]


def _no_arguments(_parser: argparse.ArgumentParser) -> None:
    return None


@dataclass(frozen=True)
class Subcommand:
    name: Command
    help: str
    run: Handler
    arguments: Callable[[argparse.ArgumentParser], None] = _no_arguments


def _done(step: Callable[[Context], object]) -> Handler:
    """A step whose success is its return without an AgentError."""

    def run(ctx: Context, _args: argparse.Namespace) -> int:
        step(ctx)
        return 0

    return run


def _sync_config(ctx: Context, _args: argparse.Namespace) -> int:
    print(json.dumps({"changed": config_sync.sync_config(ctx)}))
    return 0


def _health(ctx: Context, _args: argparse.Namespace) -> int:
    return 1 if boot.health(ctx) else 0


def _health_check(ctx: Context, _args: argparse.Namespace) -> int:
    return periodic.health_check(ctx)


def _ship_logs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--why", default="asked", help="recorded with the logs")


def _ship_logs(ctx: Context, args: argparse.Namespace) -> int:
    print(json.dumps({"written": logs.ship_logs(ctx, args.why)}))
    return 0


def _control_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print what a pass would do")


def _control(ctx: Context, args: argparse.Namespace) -> int:
    result = controller.control(ctx, dry_run=args.dry_run)
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
        print(json.dumps(controller.reset_breaker(ctx, args.pool), sort_keys=True))
    else:
        print(json.dumps(controller.breakers(ctx), indent=1, sort_keys=True))
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
    result = reaper.reap(ctx, grace=args.grace, ec2=not args.no_ec2, dry_run=args.dry_run)
    print(json.dumps(result, sort_keys=True))
    return 1 if result["failed"] else 0


def _accounting_db(ctx: Context, _args: argparse.Namespace) -> int:
    print(json.dumps(accounting_db.accounting_db(ctx), sort_keys=True))
    return 0


def _apply_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print what would be done")


def _accounting_apply(ctx: Context, args: argparse.Namespace) -> int:
    result = associations.accounting_apply(ctx, dry_run=args.dry_run)
    print(json.dumps(result, sort_keys=True))
    return 1 if result.get("failed") else 0


def _usage_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--start", help="YYYY-MM-DD[THH:MM[:SS]] (default: this month's first day)")
    parser.add_argument("--end", help="YYYY-MM-DD[THH:MM[:SS]] (default: now)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _usage(ctx: Context, args: argparse.Namespace) -> int:
    try:
        start = usage.parse_when(args.start) if args.start else None
        end = usage.parse_when(args.end) if args.end else None
    except ValueError as exc:
        log(f"usage: {exc}")
        return 2
    report = usage.usage(ctx, start, end)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, sort_keys=True))
    else:
        pools = accounting_db.require_accounting(ctx).pools
        print(usage.render_table(report, pools), end="")
    return 0


COMMANDS: tuple[Subcommand, ...] = (
    Subcommand(
        Command.SYNC_CONFIG,
        "read the manifest (named by its parameter), download this role's files from the "
        "config store, check their sha256, write them atomically; print what changed (head: "
        "enable the reaper's timer where it is disabled)",
        _sync_config,
    ),
    Subcommand(
        Command.PARAMS,
        "wait for the deploy-time SSM parameters this role needs to start its Slurm daemon (a "
        "worker: the head's address), write node.env, name the node (<pool>-<n>, n = low 16 "
        "bits of its private address)",
        _done(params.params),
    ),
    Subcommand(
        Command.HEAD_ADDRESS,
        "(worker, before every slurmd start) the head node's address from its parameter into "
        "node.env and /etc/hosts; the address known so far if it cannot be read",
        _done(params.head_address),
    ),
    Subcommand(
        Command.MUNGE_KEY,
        "write /etc/munge/munge.key (0400, munge) from Secrets Manager",
        _done(munge.munge_key),
    ),
    Subcommand(
        Command.HEALTH,
        "(worker, before every slurmd start) the boot health check: GPU, Neuron and EFA "
        "devices present, nvidia-smi answering for every GPU with no ECC error pending, EFA "
        "ports ACTIVE, shared file systems answering; on the instance's first boot DCGM's "
        "diagnostic. On failure: logs to the bucket, the instance marked Unhealthy in its Auto "
        "Scaling group, exit non-zero (slurmd never starts)",
        _health,
    ),
    Subcommand(
        Command.HEALTH_CHECK,
        "(worker; Slurm's HealthCheckProgram, every HealthCheckInterval) the cheap checks, new "
        "critical XIDs in the kernel log, file systems, full volumes, EC2's spot notice: a "
        "finding drains the node with `slurmstack:<check>: <detail>` and copies its logs to the "
        "bucket; a terminating instance copies its logs",
        _health_check,
    ),
    Subcommand(*join_hook.ROW),
    Subcommand(*images_prune.ROW),
    Subcommand(
        Command.SHIP_LOGS,
        "(worker) copy this node's boot, health and slurmd logs to the cluster bucket, under "
        "logs/<pool>/<instance ARN>/",
        _ship_logs,
        _ship_logs_arguments,
    ),
    Subcommand(
        Command.SCRATCH,
        "RAID0 over the instance-store NVMe disks, mounted at the pool's scratch path and kept "
        "in /etc/fstab (nofail); after a reboot the array is mounted again, after a stop and "
        "start (blank disks) made anew; fails when it cannot be mounted",
        _done(scratch.scratch),
    ),
    Subcommand(
        Command.MOUNTS,
        "wait for the file systems' parameters, then EFS (TLS) and FSx for Lustre with the "
        "image's mount helpers, retried until they answer (Lustre over EFA: lnet-efa first)",
        _done(mounts.mounts),
    ),
    Subcommand(
        Command.LNET_EFA,
        "LNet for an EFA-enabled FSx for Lustre file system: TCP on the primary interface, the "
        "pool's EFA interfaces, EFA preferred; idempotent, retried (also run by "
        "slurmstack-lustre-efa.service before the Lustre mount at every boot)",
        _done(lnet.lnet_efa),
    ),
    Subcommand(
        Command.STATE_VOLUME,
        "(head) the Slurm state EBS volume: find, format once, mount",
        _done(state_volume.state_volume),
    ),
    Subcommand(
        Command.REAP,
        "(head) delete the records of dead dynamic nodes: a replaced instance registers under "
        "a new name and the old record would stay DOWN for ever. Only nodes of the cluster's "
        "pools that slurmctld itself marked DOWN and not responding (or the controller, its "
        "instance gone), with no job, longer than the grace period ago, and no live instance "
        "of the cluster at their address; every controller pass does the same",
        _reap,
        _reap_arguments,
    ),
    # Slurm's power saving for the elastic nodes (power-resume, -suspend, -resume-fail, -sweep).
    *(Subcommand(*row) for row in POWER_ROWS),
    Subcommand(
        Command.CONTROL,
        "(head; slurmstack-controller.timer, every minute) one pass of the controller: nodes "
        "rebooted, replaced or left by their reason, a node whose instance is gone set DOWN, "
        "Capacity Blocks drained before their end, terminating instances drained and let go "
        "once their jobs end, dead records deleted; each action in the controller's log",
        _control,
        _control_arguments,
    ),
    Subcommand(
        Command.BREAKER,
        "(head) the pools' circuit breakers: `breaker` shows them, `breaker reset <pool>` "
        "closes one (automatic replacement resumes)",
        _breaker,
        _breaker_arguments,
    ),
    Subcommand(
        Command.ACCOUNTING_DB,
        "(head) the accounting database (local MariaDB on the state volume, or the external "
        "one) and slurmdbd, with the database password from Secrets Manager; idempotent, a "
        "no-op with accounting off",
        _accounting_db,
    ),
    Subcommand(
        Command.ACCOUNTING_APPLY,
        "(head) the definition's QoS, accounts and users, applied with sacctmgr; removes only "
        "what slurmstack created and the definition no longer names",
        _accounting_apply,
        _apply_arguments,
    ),
    Subcommand(
        Command.USAGE,
        "(head) GPU hours and cost per account and per user over a period (--start, --end; "
        "default this month), from sacct and the pools' prices; --json",
        _usage,
        _usage_arguments,
    ),
    # Jobs, containers and acceptance (slurmstack.node.workload).
    *(Subcommand(*row) for row in workload.ROWS),
)


def reference() -> str:
    """The subcommands and what each does, as the command line's help lists them."""
    return "\n".join(f"  {c.name.value:<13} {c.help}" for c in COMMANDS)
