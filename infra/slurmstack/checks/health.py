"""Health and repair: the definition's overrides of the reason -> action table name causes the
table has (slurmstack.health_policy)."""

from __future__ import annotations

from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error, suggestion
from slurmstack.findings import Finding
from slurmstack.health_policy import FIXED_CAUSES, OVERRIDABLE_CAUSES
from slurmstack.spec import ClusterSpec


# why: an override of a cause the table does not have would never apply, silently; and what an
# operator asks for in a reason (Action:Replace, Action:Reboot) is done as asked.
@rule
def health_action_cause(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for cause in spec.health.actions:
        path = f"health.actions.{cause}"
        if cause in FIXED_CAUSES:
            yield error(path, f"{cause} is an operator's request and is done as asked; remove it")
        elif cause not in OVERRIDABLE_CAUSES:
            hint = suggestion(cause, list(OVERRIDABLE_CAUSES), catalog)
            yield error(
                path,
                f"{cause!r} is not a cause of the repair table{hint}; causes are the checks "
                "(e.g. gpu-count, efa-port), gpu-xid:<number> of a critical XID and "
                "slurm:<Slurm's reason> (README, 'When nodes fail')",
            )
