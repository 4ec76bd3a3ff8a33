"""Devices and whether they answer: GPU, Neuron and EFA device counts, nvidia-smi for every GPU
(and its ECC state), EFA ports ACTIVE."""

from __future__ import annotations

import re
from pathlib import Path

from ...contract import Check, Health
from ..context import Context
from .findings import Finding

NVIDIA_SMI_SECONDS = 15
# One line per GPU: index, PCI bus id, uncorrectable ECC errors since the driver loaded,
# retired pages waiting for a GPU reset (before Ampere; "[N/A]" on Ampere and later).
GPU_QUERY = (
    "nvidia-smi",
    "--query-gpu=index,pci.bus_id,ecc.errors.uncorrected.volatile.total,retired_pages.pending",
    "--format=csv,noheader,nounits",
)
# Ampere and later remap rows instead: a pending remap waits for a GPU reset.
ROW_QUERY = (
    "nvidia-smi",
    "--query-remapped-rows=gpu_bus_id,remapped_rows.pending",
    "--format=csv,noheader",
)
# nvidia-smi's words for a GPU it cannot read ("[Unknown Error]", "[GPU requires reset]",
# "ERR!", "[GPU is lost]").
UNREADABLE = re.compile(r"Unknown Error|requires reset|ERR!|GPU is lost", re.IGNORECASE)
NOT_INSTALLED = 127
TIMED_OUT = 124


def count(directory: Path, pattern: str) -> int:
    regex = re.compile(pattern + "$")
    if not directory.is_dir():
        return 0
    return sum(1 for entry in directory.iterdir() if regex.match(entry.name))


def device_findings(ctx: Context, expected: Health) -> list[Finding]:
    found: list[Finding] = []
    dev = ctx.path("/dev")
    gpus = count(dev, r"nvidia\d+")
    if gpus != expected.gpus:
        found.append(
            Finding(Check.GPU_COUNT, f"{gpus} of {expected.gpus} GPUs present (/dev/nvidia*)")
        )
    if expected.gpus:
        found += gpu_answers(ctx, expected.gpus)
    neuron = count(dev, r"neuron\d+")
    if neuron != expected.neuron_devices:
        found.append(
            Finding(Check.NEURON_COUNT, f"{neuron} of {expected.neuron_devices} Neuron devices")
        )
    infiniband = ctx.path("/sys/class/infiniband")
    efa = len(list(infiniband.iterdir())) if infiniband.is_dir() else 0
    if efa != expected.efa_devices:
        found.append(
            Finding(
                Check.EFA_COUNT,
                f"{efa} of {expected.efa_devices} EFA devices (/sys/class/infiniband)",
            )
        )
    found += efa_ports(ctx)
    return found


def _fields(line: str) -> list[str]:
    return [f.strip() for f in line.split(",")]


def gpu_answers(ctx: Context, expected: int) -> list[Finding]:
    """nvidia-smi answers, for every GPU, with nothing unreadable and no ECC error pending."""
    result = ctx.bounded(NVIDIA_SMI_SECONDS, *GPU_QUERY)
    if result.returncode == NOT_INSTALLED:
        return []  # an image without the driver's tools: the device count stands alone
    if result.returncode == TIMED_OUT:
        return [Finding(Check.GPU_SMI, f"nvidia-smi did not answer within {NVIDIA_SMI_SECONDS} s")]
    if result.returncode != 0:
        detail = " ".join((result.stdout + result.stderr).split())[:120]
        return [Finding(Check.GPU_SMI, f"nvidia-smi failed (exit {result.returncode}): {detail}")]
    rows = [_fields(line) for line in result.stdout.splitlines() if line.strip()]
    found: list[Finding] = []
    if len(rows) != expected:
        found.append(Finding(Check.GPU_SMI, f"nvidia-smi lists {len(rows)} of {expected} GPUs"))
    for row in rows:
        index, bus = ([*row, "?", "?"])[:2]
        unreadable = [f for f in row if UNREADABLE.search(f)]
        if unreadable:
            found.append(Finding(Check.GPU_SMI, f"GPU {index} ({bus}): {unreadable[0]}"))
            continue
        errors = row[2] if len(row) > 2 else ""
        if errors.isdigit() and int(errors) > 0:
            found.append(
                Finding(Check.GPU_ECC, f"GPU {index} ({bus}): {errors} uncorrectable ECC errors")
            )
        if len(row) > 3 and row[3].lower() == "yes":
            found.append(
                Finding(Check.GPU_ECC, f"GPU {index} ({bus}): retired pages pending a reset")
            )
    found += pending_row_remaps(ctx)
    return found


def pending_row_remaps(ctx: Context) -> list[Finding]:
    result = ctx.bounded(NVIDIA_SMI_SECONDS, *ROW_QUERY)
    if result.returncode != 0:
        return []  # GPUs before Ampere have no row remapping
    found = []
    for line in result.stdout.splitlines():
        row = _fields(line)
        if len(row) >= 2 and row[1] not in ("0", "No", "[N/A]", "N/A"):
            found.append(
                Finding(Check.GPU_ECC, f"GPU {row[0]}: remapped rows pending a reset ({row[1]})")
            )
    return found


def efa_ports(ctx: Context) -> list[Finding]:
    """Every port of every EFA device ACTIVE (its state file reads e.g. "4: ACTIVE")."""
    found = []
    for state in sorted(ctx.path("/sys/class/infiniband").glob("*/ports/*/state")):
        text = state.read_text().strip()
        if not text.endswith("ACTIVE"):
            device, port = state.parts[-4], state.parts[-2]
            found.append(Finding(Check.EFA_PORT, f"{device} port {port} is {text or 'unknown'}"))
    return found
