"""The alert rules, as code: what an operator must act on (docs/observing.md, "Alerts"), with
the thresholds of the definition's observability.alerts, rendered into the head's Prometheus
rule file. Recording rules first: the cost panels and the idle-GPU alert read them, and they
keep a job's account on its idle GPU-hours after the job has left the queue.

Each rule's labels: ``severity`` (critical: act now; warning: act today; info) and ``kind``,
the event's alert kind (EventBridge rules can match it). Every rule is tested with
Prometheus's own `promtool test rules`, firing and not (tests/observability/test_rules.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from slurmstack.contract import Metric
from slurmstack.plan.observability import ObservabilityPlan

# DCGM's field names as dcgm-exporter exports them (its default counters file).
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
# Recording rules.
GPU_IDLE = "slurmstack:gpu_idle_allocated"  # per allocated GPU: 1 idle, 0 busy
GPU_IDLE_COST = "slurmstack:gpu_idle_allocated_usd_per_hour"  # per idle allocated GPU, account
JOB_NODE_UTIL = "slurmstack:job_node_gpu_util"  # per job and node: the mean GPU utilisation
RUN_RATE = "slurmstack:cluster_usd_per_hour"  # the live nodes' and the head's price
HOURS_PER_MONTH = 730  # AWS's pricing convention (730 hours in a month)


@dataclass(frozen=True)
class Rule:
    name: str
    expr: str
    summary: str
    severity: str = "warning"
    for_: str = "0m"

    def document(self) -> dict[str, Any]:
        out: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.for_ != "0m":
            out["for"] = self.for_
        out["labels"] = {"severity": self.severity, "kind": self.name}
        out["annotations"] = {"summary": self.summary}
        return out


def recording_rules(observe: ObservabilityPlan) -> list[dict[str, str]]:
    idle = observe.alerts.idle_gpu_percent
    allocated = f'{GPU_UTIL}{{hpc_job!=""}}'
    return [
        {"record": GPU_IDLE, "expr": f"{allocated} < bool {idle}"},
        {
            # Each idle allocated GPU at its pool's GPU-hour price, with its job's account and
            # user: summed over time, the idle-but-allocated spend.
            "record": GPU_IDLE_COST,
            "expr": (
                f"({GPU_IDLE} == 1) * on(pool) group_left() {Metric.GPU_PRICE}"
                f" * on(hpc_job) group_left(account, user) {Metric.JOB_INFO}"
            ),
        },
        {"record": JOB_NODE_UTIL, "expr": f"avg by (hpc_job, node) ({allocated})"},
        {
            "record": RUN_RATE,
            "expr": f"sum({Metric.NODE_PRICE})",
        },
    ]


def alert_rules(observe: ObservabilityPlan) -> list[Rule]:
    alerts = observe.alerts
    straggler = 1 - alerts.straggler_percent / 100
    full = alerts.filesystem_full_percent / 100
    rules = [
        Rule(
            "NodeDrainedByHealthCheck",
            f'{Metric.NODE_DRAINED}{{check!="operator"}} == 1',
            "{{ $labels.node }} ({{ $labels.pool }}) drained by the {{ $labels.check }} check; "
            "the controller's remedy: {{ $labels.remedy }}",
        ),
        Rule(
            "GpuMissing",
            f"count by (node, pool) ({GPU_UTIL}) < on(node) group_left() {Metric.NODE_GPUS}",
            "{{ $labels.node }} reports {{ $value }} GPUs, fewer than Slurm declares",
            severity="critical",
        ),
        Rule(
            "CircuitBreakerOpen",
            f"{Metric.BREAKER_OPEN} == 1",
            "pool {{ $labels.pool }}: repairs stopped (too many replacements); "
            "`slurmstack-node breaker reset {{ $labels.pool }}` once the cause is fixed",
            severity="critical",
        ),
        Rule(
            "GpusAllocatedIdle",
            f"avg by (hpc_job) ({GPU_IDLE}) == 1",
            "job {{ $labels.hpc_job }} holds GPUs that have been idle for "
            f"{alerts.idle_gpu_minutes} minutes (below {alerts.idle_gpu_percent}%)",
            for_=f"{alerts.idle_gpu_minutes}m",
        ),
        Rule(
            "JobStraggler",
            (
                f"{JOB_NODE_UTIL} < on(hpc_job) group_left() "
                f"({straggler:g} * quantile by (hpc_job) (0.5, {JOB_NODE_UTIL}))"
                f" and on(hpc_job) (count by (hpc_job) ({JOB_NODE_UTIL}) > 1)"
            ),
            "{{ $labels.node }} runs job {{ $labels.hpc_job }} at {{ $value }}% GPU, "
            f"more than {alerts.straggler_percent}% below the job's median node",
            for_="10m",
        ),
        Rule(
            "SlurmctldDown",
            f'{Metric.DAEMON_UP}{{daemon="slurmctld"}} == 0',
            "slurmctld does not answer on the head node: no job starts",
            severity="critical",
            for_="2m",
        ),
        Rule(
            "FilesystemNearlyFull",
            (
                '1 - node_filesystem_avail_bytes{fstype=~"lustre|nfs4|ext4|xfs"}'
                f" / node_filesystem_size_bytes > {full:g}"
            ),
            "{{ $labels.mountpoint }} on {{ $labels.node }} is {{ $value | humanizePercentage }} "
            "full",
            for_="5m",
        ),
        Rule(
            "FilesystemUnavailable",
            f"{Metric.FILESYSTEM_MOUNTED} == 0 or {Metric.FILESYSTEM_WRITABLE} == 0",
            "{{ $labels.mount }} ({{ $labels.kind }}) is not mounted or not writable on "
            "{{ $labels.node }}",
            severity="critical",
            for_="2m",
        ),
        Rule(
            "PoolLaunchBackoff",
            f"{Metric.LAUNCH_FAILURES} and on(pool) ({Metric.LAUNCH_BACKOFF} == 1)",
            "pool {{ $labels.pool }} waits to launch again after {{ $value }} failed launches "
            "(see the nodes' reasons: slurmstack:launch)",
        ),
        Rule(
            "CapacityBlockEnding",
            f"{Metric.CAPACITY_BLOCK_END} - time() < {alerts.capacity_block_hours * 3600}",
            "Capacity Block {{ $labels.reservation }} of pool {{ $labels.pool }} ends in "
            "{{ $value | humanizeDuration }}",
            severity="info",
        ),
        Rule(
            "SpotInterruptionNotice",
            f"{Metric.SPOT_NOTICE} == 1",
            "EC2 reclaims {{ $labels.node }} (spot) within two minutes",
            severity="info",
        ),
        Rule(
            "HealthChecksStopped",
            f"time() - {Metric.HEALTH_LAST_RUN} > 600",
            "{{ $labels.node }} has not run its health checks for 10 minutes",
            for_="5m",
        ),
    ]
    if observe.accounting:
        rules.append(
            Rule(
                "SlurmdbdDown",
                f'{Metric.DAEMON_UP}{{daemon="slurmdbd"}} == 0',
                "slurmdbd does not answer: accounting and limits stall",
                severity="critical",
                for_="5m",
            )
        )
    if observe.budget_monthly_usd is not None:
        rules.append(
            Rule(
                "SpendBeyondBudget",
                f"{RUN_RATE} * {HOURS_PER_MONTH} > {observe.budget_monthly_usd:g}",
                'the cluster runs at ${{ $value | printf "%.0f" }} a month, beyond its budget '
                f"of ${observe.budget_monthly_usd:g}",
                for_="1h",
            )
        )
    return rules


def rule_groups(observe: ObservabilityPlan) -> dict[str, Any]:
    """The rule file, as Prometheus reads it."""
    return {
        "groups": [
            {"name": "slurmstack-recording", "rules": recording_rules(observe)},
            {"name": "slurmstack-alerts", "rules": [r.document() for r in alert_rules(observe)]},
        ]
    }
