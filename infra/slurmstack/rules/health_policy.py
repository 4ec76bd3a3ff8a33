"""The default reason -> action table of the head node's controller, and the XIDs that drain
a node: data both the checks (which causes a definition may override) and the plan (which
renders the policy into node.json) read. docs/reference/repair-table.md is written
from it (tools/docs.py)."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.contract import OPERATOR_CAUSE_PREFIX, SLURM_CAUSE_PREFIX, Check
from slurmstack.contract import Remedy as R

# Which XIDs drain a node: NVIDIA's Xid catalog for Ampere and newer GPUs ("Analyzing Xid Errors
# with the Xid Catalog", XID_SOURCE; its spreadsheet, as read in October 2025) gives each
# XID an immediate "resolution bucket". Every XID whose bucket takes the GPU or the node out of
# service is here: RESET_GPU, RESTART_BM (restart the machine), RESTART_VM, WORKFLOW_XID_48,
# WORKFLOW_NVLINK_ERR, WORKFLOW_NVLINK5_ERR (its decode table resets the GPU for the events
# marked Fatal; the agent counts only those) and XID_154 (the driver's own recovery action; the
# agent counts it unless the action is back to None). An EC2 instance's GPUs are reset by
# rebooting it, so RESET_GPU means reboot; the remedy is slurmstack's, the bucket NVIDIA's.
# Left out, as their bucket says: the application's (RESTART_APP: 13, 31, 43, 45 and the
# engines' exceptions), IGNORE (63 row remap recorded: its pending remap drains as gpu-ecc;
# 92 high single-bit rate; 94 contained ECC error), CONTACT_SUPPORT alone (unused codes), and
# the codes the catalog lists without a bucket yet (162-172). An operator adds or overrides
# any code in the definition (health.xids) without a release.
XID_SOURCE = (
    "NVIDIA, Xid catalog: https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
)


@dataclass(frozen=True)
class Xid:
    number: int
    mnemonic: str  # NVIDIA's
    meaning: str
    nvidia: str  # the catalog's immediate resolution bucket
    remedy: R
    why: str


def _nvlink5(number: int, unit: str) -> Xid:
    return Xid(
        number,
        f"NVLINK_{unit}_ERROR",
        f"Blackwell NVLink {unit} error marked Fatal",
        "WORKFLOW_NVLINK5_ERR (Fatal: RESET_GPU)",
        R.REBOOT,
        "a reset recovers the link; events marked Nonfatal are ignored",
    )


_RESET = "RESET_GPU"
CRITICAL_XIDS: tuple[Xid, ...] = (
    Xid(46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", _RESET, R.REBOOT,
        "a reboot resets the GPU"),
    Xid(48, "ROBUST_CHANNEL_GPU_ECC_DBE", "double-bit ECC error (DBE)", "WORKFLOW_XID_48",
        R.REBOOT, "the memory is retired or remapped at the next GPU reset"),
    Xid(62, "PMU_HALT_ERROR", "internal micro-controller halt", _RESET, R.REBOOT,
        "a reboot resets the GPU"),
    Xid(64, "INFOROM_DRAM_RETIREMENT_FAILURE", "row remapping failed", _RESET, R.REPLACE,
        "NVIDIA's next step is CONTACT_SUPPORT: the GPU can no longer fence off bad memory"),
    Xid(74, "NVLINK_ERROR", "NVLink error", "WORKFLOW_NVLINK_ERR", R.REBOOT,
        "a reset retrains the links; back again: replace"),
    Xid(79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus",
        "RESTART_BM", R.REPLACE, "the GPU is gone from PCIe; a new instance is quicker"),
    Xid(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "uncontained ECC error", _RESET, R.REBOOT,
        "every application on the GPU is affected"),
    Xid(109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "context switch timeout", _RESET, R.REBOOT,
        "a reboot resets the GPU"),
    Xid(110, "SEC_FAULT_ERROR", "security fault", _RESET, R.REBOOT, "a reboot resets the GPU"),
    Xid(119, "GSP_RPC_TIMEOUT", "GSP RPC timeout", _RESET, R.REBOOT,
        "the GPU's system processor needs a reset"),
    Xid(120, "GSP_ERROR", "GSP error", _RESET, R.REBOOT,
        "the GPU's system processor needs a reset"),
    Xid(136, "ALI_TRAINING_FAIL", "NVLink training failed", _RESET, R.REBOOT,
        "a reset retrains the links"),
    Xid(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "unrecovered ECC error", _RESET, R.REBOOT,
        "a reboot resets the GPU"),
    Xid(143, "GPU_INIT_ERROR", "GPU initialization error", _RESET, R.REBOOT,
        "a reboot initializes the GPU again"),
    _nvlink5(144, "SAW"),
    _nvlink5(145, "RLW"),
    _nvlink5(146, "TLW"),
    _nvlink5(147, "TREX"),
    _nvlink5(148, "NVLPW_CTRL"),
    _nvlink5(149, "NETIR"),
    _nvlink5(150, "MSE"),
    Xid(151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "key rotation error (confidential computing)",
        "RESTART_VM", R.REBOOT, "NVIDIA restarts the VM"),
    Xid(154, "GPU_RECOVERY_ACTION_CHANGED", "the driver asks for a GPU reset or a reboot",
        "XID_154", R.REBOOT, "as the driver asks; a change back to None is ignored"),
    Xid(155, "NVLINK_SW_DEFINED_ERROR", "NVLink software-defined error", _RESET, R.REBOOT,
        "a reboot resets the GPU"),
    Xid(156, "RESOURCE_RETIREMENT_EVENT", "resource retirement event", _RESET, R.REBOOT,
        "the retirement takes effect at the next GPU reset"),
    Xid(158, "GPU_FATAL_TIMEOUT", "GPU fatal timeout", _RESET, R.REBOOT,
        "a reboot resets the GPU"),
)  # fmt: skip


@dataclass(frozen=True)
class Cause:
    """One row of the reason -> action table."""

    cause: str
    what: str  # what was found, for the docs
    remedy: R
    why: str


def _check(check: Check, what: str, remedy: R, why: str) -> Cause:
    return Cause(check.value, what, remedy, why)


# The default table. A reason the table does not know (an operator's own, another tool's) is
# left alone, as is any node the power-saving programs look after (docs/when-nodes-fail.md).
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
        Cause(
            f"{Check.GPU_XID.value}:{x.number}",
            f"XID {x.number} `{x.mnemonic}`: {x.meaning}",
            x.remedy,
            f"NVIDIA: {x.nvidia}; {x.why}",
        )
        for x in CRITICAL_XIDS
    ),
    _check(
        Check.GPU_LOST,
        "the driver says a GPU fell off the bus, without an XID (e.g. at probe)",
        R.REPLACE,
        "as XID 79 (NVIDIA: RESTART_BM); a new instance is quicker",
    ),
    _check(
        Check.NVSWITCH_SXID,
        "a fatal NVSwitch SXid (the event's severity 1, or its line says Fatal)",
        R.REBOOT,
        "NVIDIA's Fabric Manager guide restarts the VM for a fatal SXid (an instance is one)",
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
    _check(
        Check.LAUNCH,
        "EC2 launched no instance for an elastic node (set DOWN by the power programs)",
        R.LEAVE,
        "the power programs offer the node again once its pool's retry is due",
    ),
    _check(
        Check.NCCL_ALLREDUCE,
        "acceptance found the node (or its pair) too slow in all-reduce (`accept --bisect`)",
        R.LEAVE,
        "an operator decides: the fabric, the node or its neighbour",
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
# What an operator asks for is done as asked, and an elastic node whose launch failed is the
# power programs' (the controller leaves the nodes they look after): these causes cannot be
# overridden.
FIXED_CAUSES = frozenset(
    {f"{OPERATOR_CAUSE_PREFIX}Replace", f"{OPERATOR_CAUSE_PREFIX}Reboot", Check.LAUNCH.value}
)
OVERRIDABLE_CAUSES = tuple(c.cause for c in CAUSES if c.cause not in FIXED_CAUSES)
