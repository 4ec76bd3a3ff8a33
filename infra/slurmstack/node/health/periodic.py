"""The periodic health check: Slurm's HealthCheckProgram (`slurmstack-node health-check`), run
by slurmd every HealthCheckInterval, as root, with only SLURMD_NODENAME in its environment,
killed after 60 s.

It runs the cheap checks (devices, nvidia-smi, ECC, EFA ports), reads the kernel log for new
critical XIDs, GPUs lost from the bus and fatal NVSwitch errors, checks file systems and
volumes, and asks the metadata service whether EC2 is about to take the instance (a spot
notice) or its group is terminating it. A finding drains the
node with one reason, `slurmstack:<check>: <detail>`; the head node's controller acts on it.

The first reason stays: a node already out of service (drained, down, rebooting) is not drained
again, so the controller's timing (the reason's stamp) holds and an operator's reason is kept;
what was found is in the health log all the same. A node drained only because a file system did
not answer or a volume was full is resumed once that has passed. slurmd also runs this once at
start, before the node is registered: there draining fails, and because the kernel log's
position only moves on once a finding was acted on, the next run finds it again."""

from __future__ import annotations

import json
import os

from ...contract import HEALTH_DIR, Check, Metric, parse_reason
from ..context import Context, log, metadata, write_atomic
from ..logs import ship_logs
from ..metrics_file import Sample, write_metrics
from ..slurm import NodeRecord
from .devices import device_findings
from .findings import Finding, most_telling, record
from .kernel_log import Cursor, new_findings, save_cursor
from .volumes import disk_findings, file_system_findings

# Within slurmd's 60 s: nvidia-smi (two queries) and the file systems are each bounded.
FILE_SYSTEM_SECONDS = 5
# A node drained for one of these is resumed when the check passes again.
PASSING = frozenset({Check.FILE_SYSTEM, Check.DISK_FULL})
# The metadata service: EC2's spot notice, the Auto Scaling lifecycle state.
SPOT_NOTICE = "spot/instance-action"
TARGET_LIFECYCLE_STATE = "autoscaling/target-lifecycle-state"
TERMINATING_SHIPPED = f"{HEALTH_DIR}/logs-shipped-terminating"
# The checks a run makes, each reported as passed or failed (the node's metrics, "health").
PERIODIC_CHECKS = (
    Check.GPU_COUNT, Check.GPU_SMI, Check.GPU_ECC, Check.GPU_XID, Check.GPU_LOST,
    Check.NVSWITCH_SXID, Check.NEURON_COUNT, Check.EFA_COUNT, Check.EFA_PORT, Check.FILE_SYSTEM,
    Check.DISK_FULL, Check.SPOT_INTERRUPTION,
)  # fmt: skip


def spot_findings(ctx: Context) -> list[Finding]:
    """EC2's interruption notice: {"action": "terminate", "time": "2025-01-01T12:00:00Z"}."""
    notice = metadata(ctx, SPOT_NOTICE)
    if not notice:
        return []
    try:
        data = json.loads(notice)
        action, when = str(data["action"]), str(data["time"])
    except (ValueError, KeyError, TypeError):
        action, when = "interrupt", notice.strip()
    return [Finding(Check.SPOT_INTERRUPTION, f"EC2 will {action} this spot instance at {when}")]


def ship_when_terminating(ctx: Context) -> None:
    """Once the instance's group starts terminating it (the head's controller holds it in the
    drain lifecycle hook meanwhile), its logs go to the bucket, once."""
    if metadata(ctx, TARGET_LIFECYCLE_STATE) != "Terminated":
        return
    marker = ctx.path(TERMINATING_SHIPPED)
    if marker.exists():
        return
    ship_logs(ctx, "its Auto Scaling group is terminating the instance")
    write_atomic(marker, b"shipped\n", 0o644)


def node_name(ctx: Context) -> str:
    return os.environ.get("SLURMD_NODENAME") or ctx.node_env().node_name


def node_record(ctx: Context, name: str) -> NodeRecord | None:
    result = ctx.sh("scontrol", "--oneliner", "show", "node", name, check=False)
    if result.returncode != 0 or not result.stdout.startswith("NodeName="):
        return None
    return NodeRecord.parse(result.stdout.splitlines()[0])


def findings(ctx: Context) -> tuple[list[Finding], Cursor]:
    config = ctx.config()
    found = spot_findings(ctx)
    logged, cursor = new_findings(ctx, config.health)
    found += logged
    found += device_findings(ctx, config.health)
    found += file_system_findings(ctx, config.mounts, FILE_SYSTEM_SECONDS)
    found += disk_findings(ctx, config)
    return found, cursor


def verdicts(found: list[Finding], now: float) -> list[Sample]:
    """Each check's verdict of this run, when it ran, and whether EC2 gave a spot notice."""
    failed = {f.check for f in found}
    samples: list[Sample] = [
        (Metric.HEALTH_CHECK_OK, {"check": c.value}, 0.0 if c in failed else 1.0)
        for c in PERIODIC_CHECKS
    ]
    samples.append((Metric.HEALTH_LAST_RUN, {}, now))
    samples.append((Metric.SPOT_NOTICE, {}, 1.0 if Check.SPOT_INTERRUPTION in failed else 0.0))
    return samples


def health_check(ctx: Context) -> int:
    """0 when the node is healthy, 1 when something was found (slurmd logs the status)."""
    found, cursor = findings(ctx)
    try:
        write_metrics(ctx, "health", verdicts(found, float(ctx.clock())))
    except OSError as exc:
        log(f"could not write the health metrics: {exc}")
    try:
        ship_when_terminating(ctx)
    except Exception as exc:
        log(f"could not copy the logs to the bucket: {exc}")
    name = node_name(ctx)
    current = node_record(ctx, name)
    if not found:
        save_cursor(ctx, cursor)
        if current is not None:
            resume_if_passed(ctx, name, current)
        return 0
    record(ctx, found, "health-check")
    # Already out of service (drained, down, failed) or rebooting: nothing to add.
    if current is not None and (current.out_of_service or current.rebooting):
        save_cursor(ctx, cursor)
        return 1
    chosen = most_telling(found)
    drained = ctx.sh(
        "scontrol", "update", f"nodename={name}", "state=drain", f"reason={chosen.reason}",
        check=False,
    )  # fmt: skip
    if drained.returncode != 0:
        # Not registered yet (slurmd's first run): found again next time.
        log(f"could not drain {name}: {(drained.stderr or drained.stdout).strip()}")
        return 1
    save_cursor(ctx, cursor)
    log(f"drained {name}: {chosen.reason}")
    try:
        ship_logs(ctx, chosen.reason)
    except Exception as exc:
        log(f"could not copy the logs to the bucket: {exc}")
    return 1


def resume_if_passed(ctx: Context, name: str, current: NodeRecord) -> None:
    """A node this check drained for a condition that passes again returns to service."""
    parsed = parse_reason(current.reason)
    if parsed is None or parsed[0] not in PASSING or "DRAIN" not in current.state:
        return
    ctx.sh("scontrol", "update", f"nodename={name}", "state=resume", check=False)
    log(f"resumed {name}: {parsed[0]} passes again")
