"""`head-metrics` (the head, on a timer every scrape interval): the scrape targets, and the
head's metrics files. slurm.prom: Slurm as slurmstack reads it (slurm_metrics), with Slurm's own
names when slurmctld does not serve them; head.prom: the daemons, the controller's breakers and
actions, the power programs' launch back-off, the Capacity Blocks' ends, fair share, and the
prices plan has (a live node's, a GPU-hour's) that the cost panels and the budget alert use."""

from __future__ import annotations

import datetime
import json
from collections import Counter
from typing import Any

from ...contract import (
    CONTROLLER_LOG_PATH,
    CONTROLLER_STATE_PATH,
    LOGIN_TARGETS_FILE,
    MONITORING_CONFIG_PATH,
    POWER_STATE_PATH,
    Metric,
    MonitoringConfig,
    NodeConfig,
    load_document,
)
from ..context import AgentError, Context, log
from ..metrics_file import Sample, write_metrics
from ..slurm import NodeRecord, slurm_nodes
from . import slurm_metrics as sm
from .targets import scrapeable, write_login_targets, write_targets

DAEMON_SECONDS = 10
HEAD = "head"


def monitoring_config(ctx: Context) -> MonitoringConfig:
    path = ctx.path(MONITORING_CONFIG_PATH)
    if not path.exists():
        raise AgentError(f"{MONITORING_CONFIG_PATH} is missing: head-metrics runs on the head")
    return load_document(MonitoringConfig, path.read_text())


def daemon_samples(ctx: Context, monitoring: MonitoringConfig) -> list[Sample]:
    ping = ctx.bounded(DAEMON_SECONDS, "scontrol", "ping")
    samples: list[Sample] = [
        (Metric.DAEMON_UP, {"daemon": "slurmctld"}, 1.0 if "is UP" in (ping.stdout or "") else 0.0)
    ]
    if monitoring.accounting:
        dbd = ctx.bounded(
            DAEMON_SECONDS, "sacctmgr", "--noheader", "show", "cluster", "format=cluster"
        )
        samples.append(
            (Metric.DAEMON_UP, {"daemon": "slurmdbd"}, 1.0 if dbd.returncode == 0 else 0.0)
        )
    return samples


def fairshare_samples(ctx: Context) -> list[Sample]:
    result = ctx.bounded(DAEMON_SECONDS, "sshare", "--all", "--parsable2", "--noheader",
                         "--format=Account,User,FairShare")  # fmt: skip
    samples: list[Sample] = []
    for line in result.stdout.splitlines() if result.returncode == 0 else []:
        account, user, share = [*line.split("|"), "", "", ""][:3]
        try:
            value = float(share)
        except ValueError:
            continue
        samples.append((Metric.FAIRSHARE, {"account": account.strip(), "user": user}, value))
    return samples


def _json(ctx: Context, node_path: str) -> dict[str, Any]:
    try:
        data = json.loads(ctx.path(node_path).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def controller_samples(ctx: Context, config: NodeConfig) -> list[Sample]:
    """The breakers and recent replacements (the controller's memory) and every action it
    recorded (its log, one JSON line each): counters Prometheus turns into a history."""
    state = _json(ctx, CONTROLLER_STATE_PATH)
    samples: list[Sample] = []
    for pool in config.pools:
        labels = {"pool": pool.name}
        samples.append(
            (Metric.BREAKER_OPEN, labels, 1.0 if pool.name in state.get("breakers", {}) else 0.0)
        )
        recent = len(state.get("replacements", {}).get(pool.name, []))
        samples.append((Metric.BREAKER_REPLACEMENTS, labels, float(recent)))
    done: Counter[tuple[str, str]] = Counter()
    path = ctx.path(CONTROLLER_LOG_PATH)
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and "action" in entry:
            done[(str(entry["action"]), "true" if entry.get("ok") else "false")] += 1
    for action in ("drain", "down", "reboot", "replace", "reap", "hold", "complete"):
        done.setdefault((action, "true"), 0)
    samples += [
        (Metric.CONTROLLER_ACTIONS, {"action": a, "ok": ok}, float(n))
        for (a, ok), n in sorted(done.items())
    ]
    state_file = ctx.path(CONTROLLER_STATE_PATH)
    if state_file.exists():
        samples.append((Metric.CONTROLLER_LAST_PASS, {}, state_file.stat().st_mtime))
    return samples


def power_samples(ctx: Context, config: NodeConfig) -> list[Sample]:
    pools = _json(ctx, POWER_STATE_PATH).get("pools", {})
    now = float(ctx.clock())
    samples: list[Sample] = []
    for pool in config.elastic_pools:
        entry = pools.get(pool.name, {})
        labels = {"pool": pool.name}
        retry_at = float(entry.get("retry_at", 0))
        samples.append((Metric.LAUNCH_FAILURES, labels, float(entry.get("failures", 0))))
        samples.append((Metric.LAUNCH_BACKOFF, labels, 1.0 if now < retry_at else 0.0))
        samples.append((Metric.LAUNCH_RETRY_AT, labels, retry_at))
    return samples


def capacity_block_samples(ctx: Context, config: NodeConfig) -> list[Sample]:
    pools = {
        p.reservation_id: p.name
        for p in config.pools
        if p.capacity_type == "capacity_block" and p.reservation_id
    }
    if not pools:
        return []
    try:
        answer = ctx.aws.ec2().describe_capacity_reservations(CapacityReservationIds=sorted(pools))
    except Exception as exc:  # botocore's errors: no sample this pass
        log(f"head-metrics: cannot read the Capacity Blocks: {exc}")
        return []
    samples: list[Sample] = []
    for item in answer.get("CapacityReservations", []):
        end = item.get("EndDate")
        if isinstance(end, datetime.datetime):
            labels = {
                "pool": pools.get(item["CapacityReservationId"], ""),
                "reservation": item["CapacityReservationId"],
            }
            samples.append((Metric.CAPACITY_BLOCK_END, labels, end.timestamp()))
    return samples


def price_samples(monitoring: MonitoringConfig, nodes: list[NodeRecord]) -> list[Sample]:
    samples: list[Sample] = [
        (Metric.NODE_PRICE, {"node": HEAD, "pool": HEAD}, monitoring.head_usd_per_hour)
    ]
    for price in monitoring.prices:
        if price.gpus:
            per_gpu = price.node_usd_per_hour / price.gpus
            samples.append((Metric.GPU_PRICE, {"pool": price.pool}, per_gpu))
        for node in nodes:
            if node.name.startswith(price.node_prefix) and scrapeable(node):
                labels = {"node": node.name, "pool": price.pool}
                samples.append((Metric.NODE_PRICE, labels, price.node_usd_per_hour))
    return samples


def head_metrics(ctx: Context) -> dict[str, Any]:
    config = ctx.config()
    if not config.is_head:
        raise AgentError("head-metrics runs on the head node")
    monitoring = monitoring_config(ctx)
    nodes = slurm_nodes(ctx, details=True)
    jobs = sm.job_records(ctx)
    slurm = [*sm.node_samples(config, nodes), *sm.job_samples(jobs)]
    if not monitoring.slurm_native_metrics:
        slurm += [
            *sm.native_node_samples(nodes),
            *sm.native_job_samples(jobs),
            *sm.scheduler_samples(ctx),
        ]
    write_metrics(ctx, "slurm", slurm)
    head = [
        *daemon_samples(ctx, monitoring),
        *controller_samples(ctx, config),
        *power_samples(ctx, config),
        *capacity_block_samples(ctx, config),
        *price_samples(monitoring, nodes),
        *(fairshare_samples(ctx) if monitoring.accounting else []),
    ]
    write_metrics(ctx, "head", head)
    targets: dict[str, int | None] = {**write_targets(ctx, config, monitoring, nodes)}
    targets[LOGIN_TARGETS_FILE] = write_login_targets(ctx, monitoring)
    return {"targets": targets, "slurm_samples": len(slurm), "head_samples": len(head)}
