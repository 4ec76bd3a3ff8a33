"""`node-metrics` (every node, on a timer): what node_exporter does not tell about a slurmstack
node. Its shared file systems, each mounted and writable (the mount's own options: a Lustre
client that lost its servers remounts read-only), and its EFA devices, each port's state and
every counter the driver keeps (hw_counters: bytes and packets sent and received, RDMA reads
and writes, drops, retransmits), under the driver's own names."""

from __future__ import annotations

from ...contract import Metric, NodeConfig
from ..context import Context
from ..metrics_file import Sample, write_metrics

INFINIBAND = "/sys/class/infiniband"


def mount_options(ctx: Context) -> dict[str, set[str]]:
    """Mount point -> its options, the last mount at a point winning (as the kernel shows it)."""
    path = ctx.path("/proc/mounts")
    out: dict[str, set[str]] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        fields = line.split()
        if len(fields) >= 4:
            out[fields[1]] = set(fields[3].split(","))
    return out


def file_system_samples(ctx: Context, config: NodeConfig) -> list[Sample]:
    options = mount_options(ctx)
    mounts = [(m.path, m.kind.value) for m in config.mounts]
    if config.scratch is not None:
        mounts.append((config.scratch.mount, "nvme-raid0"))
    samples: list[Sample] = []
    for path, kind in mounts:
        labels = {"mount": path, "kind": kind}
        mounted = path in options
        writable = mounted and "ro" not in options[path]
        samples.append((Metric.FILESYSTEM_MOUNTED, labels, 1.0 if mounted else 0.0))
        samples.append((Metric.FILESYSTEM_WRITABLE, labels, 1.0 if writable else 0.0))
    return samples


def _number(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def efa_samples(ctx: Context) -> list[Sample]:
    root = ctx.path(INFINIBAND)
    samples: list[Sample] = []
    for device in sorted(root.iterdir()) if root.is_dir() else []:
        ports = device / "ports"
        for port in sorted(ports.iterdir()) if ports.is_dir() else []:
            labels = {"device": device.name, "port": port.name}
            state = port / "state"
            text = state.read_text() if state.is_file() else ""
            samples.append((Metric.EFA_PORT_ACTIVE, labels, 1.0 if "ACTIVE" in text else 0.0))
            counters = port / "hw_counters"
            for counter in sorted(counters.iterdir()) if counters.is_dir() else []:
                value = _number(counter.read_text())
                if value is not None:
                    samples.append((Metric.EFA_COUNTER, {**labels, "counter": counter.name}, value))
    return samples


def node_metrics(ctx: Context) -> str:
    config = ctx.config()
    return write_metrics(ctx, "node", [*file_system_samples(ctx, config), *efa_samples(ctx)])
