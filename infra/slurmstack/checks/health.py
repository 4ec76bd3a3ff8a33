"""Health and repair: the definition's overrides of the reason -> action table name causes the
table has (slurmstack.rules.health_policy), and its XIDs (health.xids) say each XID once."""

from __future__ import annotations

from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error, suggestion, warning
from slurmstack.contract import Check
from slurmstack.findings import Finding
from slurmstack.rules.health_policy import CRITICAL_XIDS, FIXED_CAUSES, OVERRIDABLE_CAUSES
from slurmstack.spec import ClusterSpec, XidHandling

XID_CAUSE = f"{Check.GPU_XID.value}:"


# why: an override of a cause the table does not have would never apply, silently; and what an
# operator asks for in a reason (Action:Replace, Action:Reboot) is done as asked.
@rule
def health_action_cause(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for cause in spec.health.actions:
        path = f"health.actions.{cause}"
        if cause in FIXED_CAUSES and cause == Check.LAUNCH:
            yield error(
                path, f"{cause} is the power programs' to retry, not the controller's; remove it"
            )
        elif cause in FIXED_CAUSES:
            yield error(path, f"{cause} is an operator's request and is done as asked; remove it")
        elif _added_xid(cause, spec) is not None:
            continue  # health_xids reports it: the XID is said twice
        elif cause not in OVERRIDABLE_CAUSES:
            hint = suggestion(cause, list(OVERRIDABLE_CAUSES), catalog)
            number = cause.removeprefix(XID_CAUSE)
            xid_hint = (
                f"; to make XID {number} drain a node, add it to health.xids "
                f"(e.g. health.xids: {{{number}: reboot}})"
                if cause.startswith(XID_CAUSE) and number.isdigit()
                else ""
            )
            yield error(
                path,
                f"{cause!r} is not a cause of the repair table{hint}; causes are the checks "
                "(e.g. gpu-count, efa-port), gpu-xid:<number> of a critical XID and "
                f"slurm:<Slurm's reason> (docs/when-nodes-fail.md){xid_hint}",
            )


def _added_xid(cause: str, spec: ClusterSpec) -> int | None:
    number = cause.removeprefix(XID_CAUSE)
    if cause.startswith(XID_CAUSE) and number.isdigit() and int(number) in spec.health.xids:
        return int(number)
    return None


# why: an XID set in both health.actions and health.xids has two answers, and only one can
# apply; ignoring an XID that does not drain a node anyway is a mistaken number, most likely.
@rule
def health_xids(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    table = {x.number for x in CRITICAL_XIDS}
    for number, handling in spec.health.xids.items():
        path = f"health.xids.{number}"
        cause = f"{XID_CAUSE}{number}"
        if cause in spec.health.actions:
            yield error(
                path,
                f"XID {number} is set twice: here ({handling.value}) and in "
                f"health.actions.{cause} ({spec.health.actions[cause].value}); keep this one "
                "and remove the other",
            )
        if handling is XidHandling.IGNORE and number not in table:
            yield warning(
                path,
                f"XID {number} does not drain a node by default, so there is nothing to "
                f"ignore; the XIDs that do are {', '.join(str(n) for n in sorted(table))}",
            )
