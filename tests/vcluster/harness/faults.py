"""Faults a day-2 scenario injects into a node, through the node's stand-ins (standins.py):
a GPU lost ("gpu-tools"), records in the node's kernel log ("kernel-log"), a spot interruption
notice (the "metadata" service, VirtualCluster.notice). And what a scenario reads back: the
head's controller run as its timer runs it, node records, the bucket's logs."""

from __future__ import annotations

import json
from typing import Any

from .node import Node
from .standins import GPU_FAULTS, KERNEL_LOG


def xid(number: int, bus: str, text: str) -> str:
    """A kernel log message as the NVIDIA driver writes an XID (NVIDIA, Xid Errors)."""
    return f"NVRM: Xid (PCI:{bus}): {number}, pid=0, {text}"


def log_kernel(node: Node, *messages: str) -> None:
    """Append records to the node's kernel log, numbered after the last one there."""
    existing = node.node_file(KERNEL_LOG).read_text().splitlines()
    last = int(existing[-1].split(",")[1]) if existing else 0
    lines = [f"3,{last + 1 + i},{(last + 1 + i) * 1000},-;{m}\n" for i, m in enumerate(messages)]
    node.run("/bin/sh", "-c", f"cat >> {KERNEL_LOG}", input="".join(lines))


def gpu_faults(node: Node, faults: dict[str, Any] | None) -> None:
    """What the node's nvidia-smi and dcgmi stand-ins report (None: healthy again)."""
    if faults is None:
        node.run("rm", "-f", GPU_FAULTS)
    else:
        node.write_file(GPU_FAULTS, json.dumps(faults), "0644", "root:root")


def lose_gpu(node: Node, index: int) -> None:
    """GPU ``index`` falls off the bus: the driver logs XID 79, nvidia-smi cannot read it."""
    log_kernel(node, xid(79, f"0000:{16 + index:02x}:00", "GPU has fallen off the bus."))
    gpu_faults(node, {"lost": [index]})
