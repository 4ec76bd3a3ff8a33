"""The workload room's subcommands. node-check, nccl-verdict, accept and ecr-login are run by job
users; job-dirs and ecr-token by root (a unit)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ...contract import ACCEPT_PATH, Command
from ..context import Context
from ..subcommand import Subcommand
from . import accept, ecr, job_dirs, nccl_tests, node_check, report


def _pool_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pool", help="the pool (default: this node's)")


def _node_check_arguments(parser: argparse.ArgumentParser) -> None:
    _pool_argument(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object")


def _node_check(ctx: Context, args: argparse.Namespace) -> int:
    pool = node_check.acceptance_of(ctx, args.pool)
    env = dict(os.environ)
    checks = node_check.node_check(ctx, pool, env)
    print(node_check.report(node_check.node_name(env), pool.pool, checks, args.json), flush=True)
    return 0 if all(c.ok for c in checks) else 1


def _verdict_arguments(parser: argparse.ArgumentParser) -> None:
    _pool_argument(parser)
    parser.add_argument("--min-busbw", type=float, help="GB/s, instead of the pool's threshold")
    parser.add_argument("output", nargs="?", help="all_reduce_perf's output (default: stdin)")


def _nccl_verdict(ctx: Context, args: argparse.Namespace) -> int:
    pool = node_check.acceptance_of(ctx, args.pool)
    text = Path(args.output).read_text() if args.output else sys.stdin.read()
    threshold = pool.threshold
    minimum = (
        args.min_busbw
        if args.min_busbw is not None
        else (threshold.min_busbw_gbps if threshold else None)
    )
    message = threshold.message_bytes if threshold else 2 * 1024**3
    verdict = nccl_tests.judge(nccl_tests.parse(text), minimum, message)
    print(f"{'PASS' if verdict.ok else 'FAIL'} pool {pool.pool}: {verdict.detail}")
    if threshold is not None and args.min_busbw is None:
        print(f"  threshold: {threshold.basis}")
    return 0 if verdict.ok else 1


def _accept_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pool", action="append", default=[], help="only this pool (repeatable)")
    parser.add_argument(
        "--bisect",
        action="store_true",
        help="after a failed all-reduce, find the slow node or pair with two-node runs and "
        "drain it (root or a Slurm operator; others get the command)",
    )
    parser.add_argument("--no-drain", action="store_true", help="with --bisect: only report")
    parser.add_argument("--min-busbw", type=float, help="GB/s, instead of the pools' thresholds")
    parser.add_argument("--json", action="store_true", help="the report as one JSON document")


def _accept(ctx: Context, args: argparse.Namespace) -> int:
    options = accept.Options(
        pools=tuple(args.pool),
        bisect=args.bisect,
        drain=not args.no_drain,
        min_busbw_gbps=args.min_busbw,
    )
    cluster = accept.load(ctx).cluster
    reports = accept.accept(ctx, options)
    render = report.as_json if args.json else report.as_text
    print(render(cluster, reports), flush=True)
    return 0 if report.ok(reports) else 1


def _job_dirs(ctx: Context, _args: argparse.Namespace) -> int:
    print(json.dumps({"made": job_dirs.job_dirs(ctx)}))
    return 0


def _ecr_token(ctx: Context, _args: argparse.Namespace) -> int:
    print(json.dumps({"registry": ecr.ecr_token(ctx)}))
    return 0


def _ecr_login(ctx: Context, _args: argparse.Namespace) -> int:
    path, changed = ecr.ecr_login(ctx, dict(os.environ))
    print(f"{'wrote' if changed else 'already in'} {path}: enroot pulls from the account's ECR")
    return 0


COMMANDS = (
    Subcommand(
        Command.NODE_CHECK,
        "(in a job step) this node's GPUs, GPU topology, EFA devices, mounts and the "
        "NCCL/libfabric environment the task sees, against its pool's expectations",
        _node_check,
        _node_check_arguments,
    ),
    Subcommand(
        Command.NCCL_VERDICT,
        "pass or fail of an nccl-tests all_reduce_perf output against the pool's threshold",
        _nccl_verdict,
        _verdict_arguments,
    ),
    Subcommand(
        Command.ACCEPT,
        f"({ACCEPT_PATH}, any user, on the head) the node check and an all-reduce on every "
        "pool's free nodes, a verdict per pool; --bisect finds and drains a slow node or pair",
        _accept,
        _accept_arguments,
        where="head",
    ),
    Subcommand(
        Command.JOB_DIRS,
        "the world-writable, sticky directories jobs need: enroot's (a pool's node, before "
        "slurmd starts), the checkpoints directory on Lustre (head)",
        _job_dirs,
    ),
    Subcommand(
        Command.ECR_TOKEN,
        "(slurmstack-ecr-token.timer) the account's ECR pull token for job users on this node",
        _ecr_token,
    ),
    Subcommand(
        Command.ECR_LOGIN,
        "(any user) the account's ECR in your enroot credentials, read from the node's token",
        _ecr_login,
    ),
)
