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
    health,
    lnet,
    mounts,
    munge,
    params,
    reaper,
    scratch,
    state_volume,
    usage,
)
from .context import Context, log
from .power import environment, resume, suspend, sweep

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
    return 1 if health.health(ctx) else 0


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


def _hostlist_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("hostlist", help="the nodes, as a Slurm hostlist (e.g. gpu-e[1-4])")


def _power(step: Callable[[Context, str], dict[str, object]], program: str) -> Handler:
    """A program slurmctld runs: its environment first (power.environment), then the step."""

    def run(ctx: Context, args: argparse.Namespace) -> int:
        environment.prepare(ctx, program)
        result = step(ctx, args.hostlist)
        log(f"{program}: {json.dumps(result, sort_keys=True)}")
        print(json.dumps(result, sort_keys=True))
        return 0

    return run


def _sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print what would be done")


def _sweep(ctx: Context, args: argparse.Namespace) -> int:
    environment.prepare(ctx, Command.POWER_SWEEP.value)
    result = sweep.sweep(ctx, dry_run=args.dry_run)
    if result["returned"] or result["terminated"]:
        log(f"{Command.POWER_SWEEP.value}: {json.dumps(result, sort_keys=True)}")
    print(json.dumps(result, sort_keys=True))
    return 0


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
        "expected GPUs, Neuron and EFA devices present? If not, mark the instance Unhealthy in "
        "its Auto Scaling group and exit non-zero (slurmd never starts)",
        _health,
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
        "pools that slurmctld itself marked DOWN and not responding, with no job, longer than "
        "the grace period ago, and no live instance of the cluster at their address; run "
        "every few minutes by slurmstack-reaper.timer",
        _reap,
        _reap_arguments,
    ),
    Subcommand(
        Command.POWER_RESUME,
        "(head; slurm.conf's ResumeProgram, run by slurmctld as SlurmUser) launch an instance "
        "per elastic node of the hostlist with an EC2 Fleet of type instant from the pool's "
        "launch template, tag it with its node name, set the node's address in Slurm; nodes "
        "that get none go DOWN with EC2's error (slurmstack:launch: ...) and their pool waits",
        _power(resume.resume, Command.POWER_RESUME.value),
        _hostlist_argument,
    ),
    Subcommand(
        Command.POWER_SUSPEND,
        "(head; SuspendProgram) terminate the instances of the elastic nodes of the hostlist",
        _power(suspend.suspend, Command.POWER_SUSPEND.value),
        _hostlist_argument,
    ),
    Subcommand(
        Command.POWER_RESUME_FAIL,
        "(head; ResumeFailProgram) terminate the instances of elastic nodes that did not "
        "register within ResumeTimeout; their pool waits before it launches again",
        _power(suspend.resume_fail, Command.POWER_RESUME_FAIL.value),
        _hostlist_argument,
    ),
    Subcommand(
        Command.POWER_SWEEP,
        "(head, as SlurmUser) return to service the powered-down elastic nodes a failed launch "
        "(once their pool's retry is due), a health check or Slurm took out; terminate "
        "instances no elastic node owns; run every minute by slurmstack-power.timer",
        _sweep,
        _sweep_arguments,
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
)


def reference() -> str:
    """The subcommands and what each does, as the command line's help lists them."""
    return "\n".join(f"  {c.name.value:<13} {c.help}" for c in COMMANDS)
