"""usage (head): GPU hours and cost per account and per user over a period, from sacct.

Each job allocation (`sacct -X`) in the period counts for the part of its run inside the
period (a job still running counts up to now). Its GPU hours are the accelerators it held
(AllocTRES gres/gpu, or gres/neuron on Trainium and Inferentia pools) times those hours. Its
cost is what the share of the nodes it held costs: a job pays for the larger of its share of
the nodes' accelerators and its share of their CPUs (a job on whole nodes pays for whole nodes,
whatever it asked for), at its pool's price per instance-hour (accounting.json: the
definition's cost.instance_hourly_usd, else the catalog's on-demand list price). A pool without
a price leaves its jobs' cost out, and says so.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from ...contract import PoolPrice
from ..context import Context
from ..slurm import slurm_time
from .database import require_accounting
from .sacctmgr import parse_tres

SACCT_FIELDS = ("JobIDRaw", "User", "Account", "Partition", "Start", "End", "State", "AllocTRES")
SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class JobUsage:
    job: str
    user: str
    account: str
    pool: str
    start: float
    end: float | None  # None: still running
    gpus: int
    cpus: int


@dataclass
class Total:
    jobs: int = 0
    gpu_hours: float = 0.0
    cost_usd: float = 0.0
    unpriced_jobs: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "gpu_hours": self.gpu_hours,
            "cost_usd": self.cost_usd,
            "unpriced_jobs": self.unpriced_jobs,
        }


@dataclass
class Report:
    start: float
    end: float
    accounts: dict[str, Total] = field(default_factory=dict)
    users: dict[tuple[str, str], Total] = field(default_factory=dict)  # (account, user)
    total: Total = field(default_factory=Total)
    unpriced_pools: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        def stamp(t: float) -> str:
            return datetime.datetime.fromtimestamp(t).strftime("%Y-%m-%dT%H:%M:%S")

        return {
            "start": stamp(self.start),
            "end": stamp(self.end),
            "total": self.total.as_dict(),
            "accounts": {a: t.as_dict() for a, t in sorted(self.accounts.items())},
            "users": [
                {"account": a, "user": u, **t.as_dict()} for (a, u), t in sorted(self.users.items())
            ],
            "unpriced_pools": sorted(self.unpriced_pools),
        }


def parse_sacct(text: str) -> list[JobUsage]:
    """Job allocations from `sacct -X -n -P --format=<SACCT_FIELDS>` (standard time format);
    jobs that never started are left out."""
    jobs = []
    for line in filter(None, text.splitlines()):
        values = dict(zip(SACCT_FIELDS, line.split("|"), strict=False))
        start = slurm_time(values.get("Start"))
        if start is None:
            continue
        tres = parse_tres(values.get("AllocTRES", ""))
        jobs.append(
            JobUsage(
                job=values["JobIDRaw"],
                user=values.get("User", ""),
                account=values.get("Account", "") or "(none)",
                pool=values.get("Partition", ""),
                start=start,
                end=slurm_time(values.get("End")),
                # Accelerators: NVIDIA GPUs, or Trainium/Inferentia devices on Neuron pools.
                gpus=tres.get("gres/gpu", 0) + tres.get("gres/neuron", 0),
                cpus=tres.get("cpu", 0),
            )
        )
    return jobs


def node_share(job: JobUsage, pool: PoolPrice | None) -> float:
    """The share of its pool's nodes a job held, in nodes: the larger of its GPU and CPU share."""
    if pool is None:
        return 0.0
    shares = [job.cpus / pool.cpus] if pool.cpus else []
    if pool.gpus:
        shares.append(job.gpus / pool.gpus)
    return max(shares, default=0.0)


def summarize(
    jobs: list[JobUsage], pools: tuple[PoolPrice, ...], start: float, end: float, now: float
) -> Report:
    by_name = {p.name: p for p in pools}
    report = Report(start=start, end=end)
    for job in jobs:
        finished = job.end if job.end is not None else now
        seconds = min(finished, end) - max(job.start, start)
        if seconds <= 0:
            continue
        hours = seconds / SECONDS_PER_HOUR
        pool = by_name.get(job.pool)
        price = pool.usd_per_hour if pool is not None else None
        gpu_hours = job.gpus * hours
        cost = node_share(job, pool) * hours * price if price is not None else 0.0
        for total in (
            report.total,
            report.accounts.setdefault(job.account, Total()),
            report.users.setdefault((job.account, job.user), Total()),
        ):
            total.jobs += 1
            total.gpu_hours += gpu_hours
            total.cost_usd += cost
            if price is None:
                total.unpriced_jobs += 1
        if price is None:
            report.unpriced_pools.add(job.pool or "(no partition)")
    return report


def render_table(report: Report, pools: tuple[PoolPrice, ...]) -> str:
    data = report.as_dict()
    lines = [f"usage from {data['start']} to {data['end']}", ""]
    lines.append(f"{'account':<20} {'user':<16} {'jobs':>6} {'GPU hours':>12} {'cost USD':>12}")
    for account, total in data["accounts"].items():
        lines.append(
            f"{account:<20} {'':<16} {total['jobs']:>6} {total['gpu_hours']:>12.2f} "
            f"{total['cost_usd']:>12.2f}"
        )
        for row in data["users"]:
            if row["account"] == account:
                lines.append(
                    f"{'':<20} {row['user']:<16} {row['jobs']:>6} {row['gpu_hours']:>12.2f} "
                    f"{row['cost_usd']:>12.2f}"
                )
    t = data["total"]
    lines.append(
        f"{'total':<20} {'':<16} {t['jobs']:>6} {t['gpu_hours']:>12.2f} {t['cost_usd']:>12.2f}"
    )
    lines.append("")
    lines.append("prices per instance-hour (a job pays its share of its nodes: GPUs or CPUs):")
    for pool in pools:
        price = pool.usd_per_hour
        shown = f"{price:.4f} USD" if price is not None else "none"
        lines.append(f"  {pool.name}: {pool.instance_type} {shown} ({pool.price_source})")
    if data["unpriced_pools"]:
        lines.append(
            f"costs leave out the jobs of {', '.join(data['unpriced_pools'])}: no price "
            "(set cost.instance_hourly_usd)"
        )
    return "\n".join(lines) + "\n"


def parse_when(text: str) -> float:
    """YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS], local time (as sacct reads it)."""
    for form in ("%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.datetime.strptime(text, form).timestamp()
        except ValueError:
            continue
    raise ValueError(f"{text!r} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS])")


def _sacct_time(t: float) -> str:
    return datetime.datetime.fromtimestamp(t).strftime("%Y-%m-%dT%H:%M:%S")


def usage(ctx: Context, start: float | None = None, end: float | None = None) -> Report:
    """The usage report over [start, end); by default this month so far."""
    config = require_accounting(ctx)
    now = float(ctx.clock())
    if end is None:
        end = now
    if start is None:
        today = datetime.datetime.fromtimestamp(now)
        start = today.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()
    text = ctx.ok(
        "env",
        "SLURM_TIME_FORMAT=standard",
        "sacct",
        "--allusers",
        "--allocations",
        "--noheader",
        "--parsable2",
        f"--starttime={_sacct_time(start)}",
        f"--endtime={_sacct_time(end)}",
        f"--format={','.join(SACCT_FIELDS)}",
    )
    return summarize(parse_sacct(text), config.pools, start, end, now)
