"""The accounting room's subcommands: slurmdbd and its database, the definition's
associations, and the usage report."""

from __future__ import annotations

import argparse
import json

from ...contract import Command
from ..context import Context, log
from ..subcommand import Subcommand
from . import apply, database, usage


def _accounting_db(ctx: Context, _args: argparse.Namespace) -> int:
    print(json.dumps(database.accounting_db(ctx), sort_keys=True))
    return 0


def _apply_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print what would be done")


def _accounting_apply(ctx: Context, args: argparse.Namespace) -> int:
    result = apply.accounting_apply(ctx, dry_run=args.dry_run)
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
        pools = database.require_accounting(ctx).pools
        print(usage.render_table(report, pools), end="")
    return 0


COMMANDS = (
    Subcommand(
        Command.ACCOUNTING_DB,
        "the accounting database (local MariaDB on the state volume, or the external "
        "one) and slurmdbd, with the database password from Secrets Manager; idempotent, a "
        "no-op with accounting off",
        _accounting_db,
        where="head",
    ),
    Subcommand(
        Command.ACCOUNTING_APPLY,
        "the definition's QoS, accounts and users, applied with sacctmgr; removes only "
        "what slurmstack created and the definition no longer names",
        _accounting_apply,
        _apply_arguments,
        where="head",
        once_per_cluster=True,
    ),
    Subcommand(
        Command.USAGE,
        "GPU hours and cost per account and per user over a period (--start, --end; "
        "default this month), from sacct and the pools' prices; --json",
        _usage,
        _usage_arguments,
        where="head",
    ),
)
