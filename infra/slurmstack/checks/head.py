"""The head node's failover: what head_node.backup needs of the rest of the definition."""

from __future__ import annotations

from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error
from slurmstack.contract import DatabaseType
from slurmstack.findings import Finding
from slurmstack.spec import ClusterSpec


# The local database is MariaDB on the head's own EBS volume, which the backup cannot reach: its
# slurmdbd would have no database while the head is gone. Both slurmdbds need one database that
# outlives the head: RDS, or a server of yours.
# why: a backup whose slurmdbd has no database records nothing while the head is down.
@rule
def backup_needs_a_shared_database(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    accounting = spec.slurm.accounting
    if (
        spec.head_node.backup
        and accounting.enabled
        and accounting.database.type is DatabaseType.LOCAL
    ):
        yield error(
            "head_node.backup",
            "a backup controller needs an accounting database both controllers reach, and the "
            "local one lives on the head node: set slurm.accounting.database.type to rds (or "
            "external, with host and password_secret), or turn accounting off",
        )
