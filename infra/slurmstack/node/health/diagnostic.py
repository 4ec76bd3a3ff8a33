"""The deep GPU diagnostic, once per instance: DCGM's `dcgmi diag -r 2` (medium: hardware,
memory, PCIe/NVLink bandwidth) where DCGM is installed. It runs in the boot health check, before
slurmd starts, so the node is held out of scheduling until it passes; a pass is recorded with
the instance id, so reboots skip it and a new instance (even from a snapshot) runs it."""

from __future__ import annotations

from ...contract import DEEP_DIAGNOSTIC_SECONDS, HEALTH_DIR, Check, Health
from ..context import Context, log, write_atomic
from .dcgm_diag import failed_tests
from .devices import NOT_INSTALLED
from .findings import Finding

PASSED = f"{HEALTH_DIR}/deep-diagnostic.passed"
DIAG = ("dcgmi", "diag", "-r", "2")


def deep_diagnostic(ctx: Context, health: Health, instance: str) -> list[Finding]:
    if not health.deep_diagnostic:
        return []
    passed = ctx.path(PASSED)
    if passed.exists() and passed.read_text().strip() == instance:
        return []
    log(f"first boot of {instance}: {' '.join(DIAG)} (up to {DEEP_DIAGNOSTIC_SECONDS} s)")
    result = ctx.bounded(DEEP_DIAGNOSTIC_SECONDS, *DIAG)
    if result.returncode == NOT_INSTALLED:
        log("DCGM is not installed: the deep diagnostic is skipped")
        return []
    failed = failed_tests(result.stdout)
    if result.returncode != 0 or failed:
        what = "; ".join(f.describe() for f in failed) if failed else f"exit {result.returncode}"
        return [Finding(Check.GPU_DIAG, f"{' '.join(DIAG)} failed: {what}")]
    write_atomic(passed, f"{instance}\n".encode(), 0o644)
    return []
