"""Stack outputs of a SlurmCluster (exported by the entry point)."""

from __future__ import annotations

import pulumi

from slurmstack.stack.cluster import SlurmCluster


def export_outputs(cluster: SlurmCluster) -> None:
    for key, value in cluster.outputs().items():
        pulumi.export(key, value)
