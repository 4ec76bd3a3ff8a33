"""The reasons slurmstack gives a node in Slurm, and the causes the repair table is written in."""

from __future__ import annotations

import enum
import re

__all__ = [
    "CONTROLLER_NOTES",
    "HELD_NOTE",
    "OPERATOR_ACTION",
    "OPERATOR_CAUSE_PREFIX",
    "REASON_CUT_MARK",
    "REASON_MAX_CHARACTERS",
    "REASON_PREFIX",
    "REBOOTING_NOTE",
    "REPLACING_NOTE",
    "SLURM_CAUSE_PREFIX",
    "SLURM_REASON_SEPARATOR",
    "Check",
    "cause_of",
    "is_our_reason",
    "parse_reason",
    "reason",
    "reason_parts",
]

# Every reason slurmstack gives a node has one form, `slurmstack:<check>: <detail>`, built by
# reason() and read by parse_reason() only: the node's health check drains with it, the head's
# controller, power programs and acceptance write theirs the same way, and the controller reads
# them all (docs/when-nodes-fail.md).
REASON_PREFIX = "slurmstack:"
# Slurm keeps a reason as given; one cut-off, whoever drains, keeps `sinfo -R` readable.
REASON_MAX_CHARACTERS = 240
REASON_CUT_MARK = "..."
# Slurm 23.02 and later stack a new reason onto the one a node has, " : " between them, and
# stamp the whole with who set the last one (set_node_reason in node_mgr.c): an operator's
# "ECC errors on GPU 3" on a node that then stops responding reads
# "ECC errors on GPU 3 : Not responding" [slurm@...]. 22.05 kept the first reason alone.
SLURM_REASON_SEPARATOR = " : "
# What the head's controller appends to a reason it acts on, so a later pass sees the action
# under way; reason_parts() strips them.
REPLACING_NOTE = "; replacing "
HELD_NOTE = "; held: "
REBOOTING_NOTE = "; rebooting"
CONTROLLER_NOTES = (REPLACING_NOTE, HELD_NOTE, REBOOTING_NOTE)
# The separator after <check> is ": "; a bare ":" is read too ("slurmstack:gpu-xid:79 ...").
_REASON = re.compile(
    rf"^{re.escape(REASON_PREFIX)}(?P<check>[a-z][a-z0-9-]*):\s?(?P<detail>.*)$", re.DOTALL
)


class Check(enum.StrEnum):
    """The <check> of a slurmstack reason: what was found, and by whom. Each has a row in the
    repair table (slurmstack.rules.health_policy.CAUSES), so the table names every reason an operator
    can see."""

    # Found on the node (slurmstack.node.health), at boot or by Slurm's HealthCheckProgram.
    GPU_COUNT = "gpu-count"  # fewer GPU device files than the instance type has
    GPU_SMI = "gpu-smi"  # nvidia-smi does not answer, or not for every GPU
    GPU_ECC = "gpu-ecc"  # uncorrectable ECC errors, or pages/rows waiting for a GPU reset
    GPU_XID = "gpu-xid"  # a critical XID in the kernel log; the detail starts with its number
    GPU_LOST = "gpu-lost"  # the driver says a GPU fell off the bus, without an XID
    NVSWITCH_SXID = "nvswitch-sxid"  # a fatal NVSwitch SXid in the kernel log
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
    # Found by the head's power programs (slurmstack.node.power): EC2 launched no instance.
    LAUNCH = "launch"
    # Found by acceptance (slurmstack.node.workload): a node or pair too slow in all-reduce.
    NCCL_ALLREDUCE = "nccl-allreduce"


def reason(check: Check, detail: str) -> str:
    """A reason in slurmstack's one form: on one line (Slurm keeps it so), at most
    REASON_MAX_CHARACTERS long (a longer one ends in REASON_CUT_MARK)."""
    text = f"{REASON_PREFIX}{check.value}: {' '.join(detail.split())}"
    if len(text) <= REASON_MAX_CHARACTERS:
        return text
    return text[: REASON_MAX_CHARACTERS - len(REASON_CUT_MARK)] + REASON_CUT_MARK


def reason_parts(text: str) -> tuple[str, ...]:
    """The reasons Slurm stacked into one node's reason, oldest first, each without what the
    controller appended to it."""
    parts = []
    for part in text.split(SLURM_REASON_SEPARATOR):
        for note in CONTROLLER_NOTES:
            part = part.split(note, 1)[0]
        if part.strip():
            parts.append(part.strip())
    return tuple(parts)


def parse_reason(text: str) -> tuple[str, str] | None:
    """(check, detail) of one slurmstack reason (one part of a stack); None for any other text."""
    match = _REASON.match(text.strip())
    return (match["check"], match["detail"]) if match else None


def is_our_reason(part: str) -> bool:
    """Whether one part of a node's reason is slurmstack's."""
    return parse_reason(part) is not None


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
