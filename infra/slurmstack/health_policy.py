"""The default reason -> action table of the head node's controller, and the XIDs that drain
a node: data both the checks (which causes a definition may override) and the plan (which
renders the policy into node.json) read. The README's "When nodes fail" table is generated
from it (slurmstack.docs)."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.contract import OPERATOR_CAUSE_PREFIX, SLURM_CAUSE_PREFIX, Check
from slurmstack.contract import Remedy as R

# NVIDIA, "Xid Errors" (https://docs.nvidia.com/deploy/xid-errors/) and its catalog for Ampere
# and newer GPUs ("Analyzing Xid Errors with the Xid Catalog", same site), give each XID's
# meaning; the remedy is slurmstack's. XIDs NVIDIA attributes to applications (13 graphics
# engine exception, 31 GPU memory page fault, 43 GPU stopped processing, 45 preemptive
# cleanup) and XID 94 (a contained ECC error: the application is ended, the page offlined,
# the GPU keeps serving) do not drain a node.
XID_SOURCE = "NVIDIA, Xid Errors: https://docs.nvidia.com/deploy/xid-errors/"


@dataclass(frozen=True)
class Xid:
    number: int
    meaning: str
    remedy: R
    why: str


CRITICAL_XIDS: tuple[Xid, ...] = (
    Xid(48, "double-bit ECC error (DBE)", R.REBOOT, "the page is retired at the next GPU reset"),
    Xid(
        63,
        "ECC page retirement or row remapping recorded",
        R.REBOOT,
        "it takes effect at the next GPU reset",
    ),
    Xid(
        64,
        "ECC page retirement or row remapping failed",
        R.REPLACE,
        "the GPU can no longer fence off bad memory",
    ),
    Xid(74, "NVLink error", R.REBOOT, "a reset retrains the links; back again: replace"),
    Xid(79, "GPU has fallen off the bus", R.REPLACE, "the GPU is gone from PCIe"),
    Xid(92, "high single-bit ECC error rate", R.REBOOT, "remapping at the next reset"),
    Xid(95, "uncontained ECC error", R.REBOOT, "every application on the GPU is affected"),
    Xid(119, "GSP RPC timeout", R.REBOOT, "the GPU's system processor needs a reset"),
    Xid(120, "GSP error", R.REBOOT, "the GPU's system processor needs a reset"),
)


@dataclass(frozen=True)
class Cause:
    """One row of the reason -> action table."""

    cause: str
    what: str  # what was found, for the README
    remedy: R
    why: str


def _check(check: Check, what: str, remedy: R, why: str) -> Cause:
    return Cause(check.value, what, remedy, why)


# The default table. A reason the table does not know (an operator's own, another tool's) is
# left alone, as is any node the power-saving programs look after (README, "When nodes fail").
CAUSES: tuple[Cause, ...] = (
    _check(Check.GPU_COUNT, "fewer GPUs than the instance type has", R.REPLACE, "hardware"),
    _check(
        Check.GPU_SMI,
        "nvidia-smi does not answer for every GPU",
        R.REBOOT,
        "a reboot reloads the driver",
    ),
    _check(
        Check.GPU_ECC,
        "uncorrectable ECC errors, or retired pages / remapped rows pending",
        R.REBOOT,
        "pending retirements take effect at a GPU reset",
    ),
    *(
        Cause(f"{Check.GPU_XID.value}:{x.number}", f"XID {x.number}: {x.meaning}", x.remedy, x.why)
        for x in CRITICAL_XIDS
    ),
    _check(
        Check.GPU_DIAG,
        "DCGM diagnostic failed at first boot (the node never joins)",
        R.REPLACE,
        "the node marks itself Unhealthy",
    ),
    _check(Check.NEURON_COUNT, "fewer Neuron devices than expected", R.REPLACE, "hardware"),
    _check(Check.EFA_COUNT, "fewer EFA devices than the pool's layout", R.REPLACE, "hardware"),
    _check(Check.EFA_PORT, "an EFA port is not ACTIVE", R.REBOOT, "a reboot resets the device"),
    _check(
        Check.FILE_SYSTEM,
        "a shared file system does not answer in time",
        R.LEAVE,
        "usually the file system, for every node at once: new nodes would not help",
    ),
    _check(Check.DISK_FULL, "root volume or scratch nearly full", R.LEAVE, "someone's data"),
    _check(
        Check.SPOT_INTERRUPTION,
        "EC2's spot interruption notice (two minutes)",
        R.LEAVE,
        "EC2 takes the instance; its node is set DOWN when it is gone",
    ),
    _check(
        Check.CAPACITY_BLOCK_END,
        "the Capacity Block ends soon (drained by the controller)",
        R.LEAVE,
        "the block's instances go with it",
    ),
    _check(
        Check.SCALE_IN,
        "its group is terminating the instance (drained by the controller)",
        R.LEAVE,
        "the lifecycle hook completes once its jobs end",
    ),
    _check(
        Check.INSTANCE_GONE,
        "no live instance at the node's address (set DOWN by the controller)",
        R.LEAVE,
        "its jobs are requeued; the record is deleted after the grace period",
    ),
    Cause(
        f"{SLURM_CAUSE_PREFIX}Kill task failed",
        "Slurm: a job step could not be killed",
        R.REBOOT,
        "a process stuck in the kernel holds the node until a reboot",
    ),
    Cause(
        f"{SLURM_CAUSE_PREFIX}Not responding",
        "Slurm: slurmd does not answer, though its instance runs",
        R.REPLACE,
        "EC2's checks see nothing wrong with a hung node",
    ),
    Cause(f"{OPERATOR_CAUSE_PREFIX}Replace", "an operator's `Action:Replace`", R.REPLACE, "asked"),
    Cause(f"{OPERATOR_CAUSE_PREFIX}Reboot", "an operator's `Action:Reboot`", R.REBOOT, "asked"),
)
# What an operator asks for is done as asked: these causes cannot be overridden.
FIXED_CAUSES = frozenset({f"{OPERATOR_CAUSE_PREFIX}Replace", f"{OPERATOR_CAUSE_PREFIX}Reboot"})
OVERRIDABLE_CAUSES = tuple(c.cause for c in CAUSES if c.cause not in FIXED_CAUSES)
