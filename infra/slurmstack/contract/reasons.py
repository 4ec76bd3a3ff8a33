"""The reasons slurmstack gives a node in Slurm, and the causes the repair table is written in."""

from __future__ import annotations

import enum
import re

__all__ = [
    "DRAIN_REASON_PREFIX",
    "OPERATOR_ACTION",
    "OPERATOR_CAUSE_PREFIX",
    "REASON_PREFIX",
    "SLURM_CAUSE_PREFIX",
    "Check",
    "cause_of",
    "drain_reason",
    "parse_reason",
    "reason",
]

# --- day 2: health checks, repair, logs ---------------------------------------------------

# Every reason slurmstack gives a node has one form, `slurmstack:<check>: <detail>`: the node's
# health check drains with it, the head's controller reads it (and writes its own the same way).
REASON_PREFIX = "slurmstack:"
# The separator after <check> is ": "; a bare ":" is read too ("slurmstack:gpu-xid:79 ...").
_REASON = re.compile(r"^slurmstack:(?P<check>[a-z][a-z0-9-]*):\s?(?P<detail>.*)$", re.DOTALL)


class Check(enum.StrEnum):
    """The <check> of a slurmstack reason: what was found, and by whom."""

    # Found on the node (slurmstack.node.health), at boot or by Slurm's HealthCheckProgram.
    GPU_COUNT = "gpu-count"  # fewer GPU device files than the instance type has
    GPU_SMI = "gpu-smi"  # nvidia-smi does not answer, or not for every GPU
    GPU_ECC = "gpu-ecc"  # uncorrectable ECC errors, or pages/rows waiting for a GPU reset
    GPU_XID = "gpu-xid"  # a critical XID in the kernel log; the detail starts with its number
    GPU_DIAG = "gpu-diag"  # DCGM's diagnostic (dcgmi diag) failed at the instance's first boot
    NEURON_COUNT = "neuron-count"
    EFA_COUNT = "efa-count"
    EFA_PORT = "efa-port"  # an EFA port that is not ACTIVE
    FILE_SYSTEM = "file-system"  # a shared file system does not answer in time
    DISK_FULL = "disk-full"  # the root volume or scratch nearly full
    SPOT_INTERRUPTION = "spot-interruption"  # EC2's two-minute notice (instance metadata)
    # Found by the head node's controller (slurmstack.node.controller).
    CAPACITY_BLOCK_END = "capacity-block-end"
    SCALE_IN = "scale-in"  # the Auto Scaling group is terminating the instance
    INSTANCE_GONE = "instance-gone"  # no live instance of the cluster at the node's address
    OPERATOR = "operator"  # an operator's Action:Replace / Action:Reboot, being carried out


def reason(check: Check, detail: str) -> str:
    """A reason in slurmstack's one form (Slurm keeps it on one line)."""
    return f"{REASON_PREFIX}{check.value}: {' '.join(detail.split())}"


def parse_reason(text: str) -> tuple[str, str] | None:
    """(check, detail) of a slurmstack reason; None for any other text."""
    match = _REASON.match(text.strip())
    return (match["check"], match["detail"]) if match else None


# What an operator asks for in a node's reason, as SageMaker HyperPod users write it
# (`scontrol update node=X state=drain reason="Action:Replace"`).
OPERATOR_ACTION = re.compile(r"\bAction:(Replace|Reboot)\b")


def cause_of(check: str, detail: str) -> str:
    """The key the repair table is written in: the check, and for an XID its number
    (``gpu-xid:79``)."""
    if check == Check.GPU_XID:
        number = detail.split(" ", 1)[0].strip(",:")
        if number.isdigit():
            return f"{check}:{int(number)}"
    return check


# Slurm's own reasons, as causes in the repair table (slurmctld's and slurmd's texts).
SLURM_CAUSE_PREFIX = "slurm:"
# An operator's request, as a cause.
OPERATOR_CAUSE_PREFIX = "Action:"

# --- jobs, containers, acceptance ---------------------------------------------------------

# Drain reasons have one form everywhere: ``slurmstack:<check>: <detail>`` (the operator reads
# it in `sinfo -R`; the head's controller maps <check> to an action).
DRAIN_REASON_PREFIX = "slurmstack:"


def drain_reason(check: str, detail: str) -> str:
    """The Slurm reason of a node slurmstack drains, e.g.
    ``slurmstack:nccl-allreduce: 142 GB/s busbw, below 355 (pair with train-1811)``."""
    return f"{DRAIN_REASON_PREFIX}{check}: {detail}"
