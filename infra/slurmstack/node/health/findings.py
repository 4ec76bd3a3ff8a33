"""What a check finds, and the node's health log (/var/log/slurmstack/health.log): every finding
with when and where it was found, which the node copies to the bucket with its other logs."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ...contract import HEALTH_LOG_PATH, Check, reason
from ..context import Context, log

# Checks in the order a node's one reason names them: what EC2 is about to do first (it
# explains what happens next), then lost hardware, then hardware that a reset may fix, then
# the rest.
ORDER = (
    Check.SPOT_INTERRUPTION,
    Check.GPU_LOST,
    Check.GPU_XID,
    Check.NVSWITCH_SXID,
    Check.GPU_COUNT,
    Check.NEURON_COUNT,
    Check.EFA_COUNT,
    Check.GPU_SMI,
    Check.GPU_ECC,
    Check.GPU_DIAG,
    Check.EFA_PORT,
    Check.FILE_SYSTEM,
    Check.DISK_FULL,
)


@dataclass(frozen=True)
class Finding:
    check: Check
    detail: str

    @property
    def reason(self) -> str:
        return reason(self.check, self.detail)


def most_telling(findings: list[Finding]) -> Finding:
    """The finding a node's one reason names (see ORDER); the others are in the health log."""
    return min(findings, key=lambda f: ORDER.index(f.check) if f.check in ORDER else len(ORDER))


def record(ctx: Context, findings: list[Finding], when: str) -> None:
    """Append the findings to the health log and say them on stderr (slurmd's and systemd's
    logs keep that)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ctx.clock()))
    path = ctx.path(HEALTH_LOG_PATH)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        for finding in findings:
            handle.write(f"{stamp} {when}: {finding.reason}\n")
            log(f"health ({when}): {finding.reason}")
