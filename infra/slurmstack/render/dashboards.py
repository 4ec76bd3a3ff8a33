"""The dashboards, as code: Grafana dashboard documents (JSON model, schema version 39) the
head's Grafana provisions from files, and Amazon Managed Grafana imports. Every panel's query
is PromQL over the names the exporters and the agent write (slurmstack.contract.Metric, Slurm's
own, DCGM's, node_exporter's) and the recording rules (render/alerts.py); the virtual cluster's
scenario runs every query against a real Prometheus and fails on one that returns nothing.

Six dashboards: the cluster at a glance, a job's GPUs, the fabric, storage, health and repair
history, and cost (idle-but-allocated GPU-hours and their price, per account and job, at plan's
prices). A panel that needs a part the cluster lacks (accounting's fair share) is left out.
"""

from __future__ import annotations

from slurmstack.contract import Metric
from slurmstack.plan.observability import ObservabilityPlan
from slurmstack.render.alerts import GPU_IDLE, GPU_IDLE_COST, JOB_NODE_UTIL, RUN_RATE
from slurmstack.render.grafana_model import Dashboard, Panel

UTIL = "DCGM_FI_DEV_GPU_UTIL"
# The EFA driver's counters of bytes moved, and of trouble (efa_verbs.c's port statistics).
BYTES = '"tx_bytes|rx_bytes|rdma_read_bytes|rdma_write_bytes"'
TROUBLE = '".*(err|drop|retrans|unresponsive|impaired).*"'


def overview(observe: ObservabilityPlan) -> Dashboard:
    return Dashboard(
        "overview",
        "cluster overview",
        (
            Panel("Nodes by state", ((f"sum by (state) ({Metric.NODE_STATE})", "{{state}}"),)),
            Panel(
                "Nodes drained, by check",
                ((f"sum by (check) ({Metric.NODE_DRAINED})", "{{check}}"),),
            ),
            Panel(
                "GPUs allocated and busy",
                (
                    (f"sum({Metric.NODE_GPUS})", "in Slurm"),
                    ("sum(slurm_node_gpus_alloc)", "allocated"),
                    (f"sum({UTIL} > bool 5)", "busy (>5%)"),
                ),
            ),
            Panel("Queue", (("slurm_jobs_running", "running"), ("slurm_jobs_pending", "pending"))),
            Panel(
                "Jobs by partition",
                (
                    ("sum by (partition) (slurm_partition_jobs_running)", "{{partition}} running"),
                    ("sum by (partition) (slurm_partition_jobs_pending)", "{{partition}} pending"),
                ),
            ),
            Panel("Scheduler: last cycle", (("slurm_schedule_cycle_last", "main"),), unit="µs"),
        ),
    )


def job_gpus(observe: ObservabilityPlan) -> Dashboard:
    allocated = f'{UTIL}{{hpc_job!=""}}'
    return Dashboard(
        "job-gpus",
        "GPUs per job",
        (
            Panel(
                "GPU utilisation by job",
                ((f"avg by (hpc_job) ({allocated})", "job {{hpc_job}}"),),
                unit="percent",
            ),
            Panel(
                "GPU utilisation by job and node",
                ((JOB_NODE_UTIL, "{{hpc_job}} {{node}}"),),
                unit="percent",
            ),
            Panel(
                "GPU memory used by job",
                (('sum by (hpc_job) (DCGM_FI_DEV_FB_USED{hpc_job!=""})', "job {{hpc_job}}"),),
                unit="decmbytes",
            ),
            Panel(
                "Running jobs",
                (
                    (
                        f"{Metric.JOB_GPUS} * on(hpc_job) group_left(account, user, partition) {Metric.JOB_INFO}",
                        "",
                    ),
                ),
                kind="table",
            ),
        ),
    )


def fabric(observe: ObservabilityPlan) -> Dashboard:
    counter = Metric.EFA_COUNTER
    return Dashboard(
        "fabric",
        "fabric (EFA)",
        (
            Panel(
                "EFA throughput by node",
                (
                    (
                        f"sum by (node) (rate({counter}{{counter=~{BYTES}}}[5m]))",
                        "{{node}}",
                    ),
                ),
                unit="Bps",
            ),
            Panel(
                "EFA errors, drops and retransmits",
                (
                    (
                        f"sum by (node, counter) (rate({counter}{{counter=~{TROUBLE}}}[5m]))",
                        "{{node}} {{counter}}",
                    ),
                ),
            ),
            Panel(
                "EFA ports not ACTIVE",
                (
                    (
                        f"count by (node) ({Metric.EFA_PORT_ACTIVE} == 0) or on() vector(0)",
                        "{{node}}",
                    ),
                ),
            ),
        ),
    )


def storage(observe: ObservabilityPlan) -> Dashboard:
    shared = 'mountpoint!~"/(run|dev|sys|proc).*"'
    return Dashboard(
        "storage",
        "storage",
        (
            Panel(
                "Used, by node and mount",
                (
                    (
                        f"1 - node_filesystem_avail_bytes{{{shared}}} / node_filesystem_size_bytes{{{shared}}}",
                        "{{node}} {{mountpoint}}",
                    ),
                ),
                unit="percentunit",
            ),
            Panel(
                "Shared file systems mounted and writable",
                ((f"min by (mount, kind) ({Metric.FILESYSTEM_WRITABLE})", "{{mount}} ({{kind}})"),),
            ),
            Panel(
                "Disk throughput by node",
                (
                    (
                        "sum by (node) (rate(node_disk_read_bytes_total[5m])"
                        " + rate(node_disk_written_bytes_total[5m]))",
                        "{{node}}",
                    ),
                ),
                unit="Bps",
            ),
        ),
    )


def health(observe: ObservabilityPlan) -> Dashboard:
    panels = [
        Panel(
            "Failing health checks",
            ((f"count by (check) ({Metric.HEALTH_CHECK_OK} == 0) or on() vector(0)", "{{check}}"),),
        ),
        Panel(
            "Drained nodes",
            ((f"{Metric.NODE_DRAINED}", "{{node}}: {{check}} -> {{remedy}}"),),
            kind="table",
        ),
        Panel(
            "Controller actions per hour",
            (
                (
                    f'sum by (action) (increase({Metric.CONTROLLER_ACTIONS}{{ok="true"}}[1h]))',
                    "{{action}}",
                ),
            ),
        ),
        Panel(
            "Breakers and recent replacements",
            (
                (f"{Metric.BREAKER_OPEN}", "{{pool}} open"),
                (f"{Metric.BREAKER_REPLACEMENTS}", "{{pool}} replacements"),
            ),
        ),
        Panel("Daemons up", ((f"{Metric.DAEMON_UP}", "{{daemon}}"),)),
    ]
    if observe.elastic_pools:
        panels.append(
            Panel("Launch failures in a row", ((f"{Metric.LAUNCH_FAILURES}", "{{pool}}"),))
        )
    if observe.capacity_block_pools:
        panels.append(
            Panel(
                "Capacity Blocks: hours left",
                ((f"({Metric.CAPACITY_BLOCK_END} - time()) / 3600", "{{pool}}"),),
            )
        )
    if observe.accounting:
        panels.append(Panel("Fair share", ((f"{Metric.FAIRSHARE}", "{{account}} {{user}}"),)))
    return Dashboard("health", "health and repair history", tuple(panels))


def cost(observe: ObservabilityPlan) -> Dashboard:
    # The idle-but-allocated spend: each idle allocated GPU's price per hour, summed over the
    # range at one-minute resolution (an hour is 60 samples).
    spend_by = "sum by ({by}) (sum_over_time({rule}[24h:1m])) / 60"
    return Dashboard(
        "cost",
        "cost",
        (
            Panel("Cluster run rate", ((RUN_RATE, "USD per hour"),), unit="currencyUSD"),
            Panel("Idle allocated GPUs now", ((f"sum({GPU_IDLE})", "idle"),)),
            Panel(
                "Idle-but-allocated GPU-hours, last 24 h, by job",
                (
                    (
                        f"sum by (hpc_job) (sum_over_time({GPU_IDLE}[24h:1m])) / 60",
                        "job {{hpc_job}}",
                    ),
                ),
            ),
            Panel(
                "Idle-but-allocated spend, last 24 h, by account",
                ((spend_by.format(by="account", rule=GPU_IDLE_COST), "{{account}}"),),
                unit="currencyUSD",
            ),
            Panel(
                "Idle-but-allocated spend, last 24 h, by job",
                (
                    (
                        spend_by.format(by="hpc_job, account, user", rule=GPU_IDLE_COST),
                        "{{hpc_job}} ({{account}})",
                    ),
                ),
                unit="currencyUSD",
                kind="table",
            ),
        ),
    )


def dashboards(observe: ObservabilityPlan) -> tuple[Dashboard, ...]:
    return tuple(d(observe) for d in (overview, job_gpus, fabric, storage, health, cost))
