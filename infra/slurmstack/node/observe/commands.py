"""The observe room's subcommands: the metrics every node and the head write for node_exporter's
textfile collector, the scrape targets, the GPU-to-job files, and the alert relay."""

from __future__ import annotations

import argparse
import json

from ...contract import PROMETHEUS_RENDERED_CONFIG, Command
from ..context import Context, write_atomic
from ..subcommand import Subcommand
from . import diag, gpu_jobs, head_metrics, log_shipper, node_metrics, relay, remote_write


def _node_metrics(ctx: Context, _args: argparse.Namespace) -> int:
    node_metrics.node_metrics(ctx)
    return 0


def _head_metrics(ctx: Context, _args: argparse.Namespace) -> int:
    print(json.dumps(head_metrics.head_metrics(ctx), sort_keys=True))
    return 0


def _job_start(ctx: Context, _args: argparse.Namespace) -> int:
    return gpu_jobs.job_started(ctx)


def _job_end(ctx: Context, _args: argparse.Namespace) -> int:
    return gpu_jobs.job_ended(ctx)


def _relay_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--once", action="store_true", help="answer one request, then stop")


def _relay(ctx: Context, args: argparse.Namespace) -> int:
    relay.serve(ctx, once=args.once)
    return 0


def _follow_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--once", action="store_true", help="one pass over the files, then stop")


def _follow(ctx: Context, args: argparse.Namespace) -> int:
    sent = log_shipper.follow(ctx, once=args.once)
    if args.once:
        print(json.dumps({"events_sent": sent}))
    return 0


def _prometheus_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "rendered",
        nargs="?",
        default=PROMETHEUS_RENDERED_CONFIG,
        help=f"the rendered configuration with the stand-in URL (default {PROMETHEUS_RENDERED_CONFIG})",
    )


def _prometheus_config(ctx: Context, args: argparse.Namespace) -> int:
    remote_write.write_live_config(ctx, args.rendered)
    return 0


def _diag_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="/tmp", help="the directory the bundle is written to")


def _diag(ctx: Context, args: argparse.Namespace) -> int:
    name, data = diag.bundle(ctx)
    path = ctx.path(args.out) / f"{name}.tar.gz"
    write_atomic(path, data, 0o600)  # root's: it holds the node's logs
    print(path)
    return 0


COMMANDS = (
    Subcommand(
        Command.NODE_METRICS,
        "(a timer, every scrape interval) this node's shared file systems (mounted, writable) "
        "and EFA ports and counters, for node_exporter's textfile collector",
        _node_metrics,
    ),
    Subcommand(
        Command.HEAD_METRICS,
        "(a timer, every scrape interval) Prometheus's scrape targets from Slurm's nodes, and "
        "the head's metrics: nodes by state and reason, running jobs' accounts and GPUs, "
        "Slurm's own names where slurmctld serves none, daemons, breakers, controller actions, "
        "launch back-off, Capacity Block ends, fair share and plan's prices",
        _head_metrics,
        where="head",
    ),
    Subcommand(
        Command.GPU_JOB_START,
        "(Slurm's Prolog) record which GPUs the job holds, for dcgm-exporter's hpc_job label",
        _job_start,
        where="worker",
    ),
    Subcommand(
        Command.GPU_JOB_END,
        "(Slurm's Epilog) forget the job's GPUs",
        _job_end,
        where="worker",
    ),
    Subcommand(
        Command.ALERT_RELAY,
        "(a service) Alertmanager's webhook on loopback: each alert to EventBridge, each "
        "notification to the alert topic",
        _relay,
        _relay_arguments,
        where="head",
    ),
    Subcommand(
        Command.FOLLOW_LOGS,
        "(a service) this node's Slurm, agent and health-check logs, line by line as they "
        "grow, to the cluster's CloudWatch Logs groups (stream: the instance id)",
        _follow,
        _follow_arguments,
    ),
    Subcommand(
        Command.PROMETHEUS_CONFIG,
        "(the Prometheus unit's start, with observability.managed_prometheus) the live "
        "configuration: the workspace's remote-write URL in place of the rendered stand-in",
        _prometheus_config,
        _prometheus_config_arguments,
        where="head",
    ),
    Subcommand(
        Command.DIAG,
        "a read-only bundle of this node for a bug report (.tar.gz): versions, slurm.conf, "
        "node.json, sinfo and scontrol show node, the agent's state, the logs' tails",
        _diag,
        _diag_arguments,
    ),
)
