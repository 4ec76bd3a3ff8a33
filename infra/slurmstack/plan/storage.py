"""What the plan decides about storage: the mounts of every node and the Lustre file system."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.catalog import Catalog
from slurmstack.contract import MountKind
from slurmstack.rules.fsx import lustre_efa_enabled, resolved_throughput
from slurmstack.spec import ClusterSpec, LustreSpec


@dataclass(frozen=True)
class MountPlan:
    path: str
    kind: MountKind
    shared: bool


@dataclass(frozen=True)
class LustrePlan:
    spec: LustreSpec
    efa: bool
    per_unit_storage_throughput: int | None


def plan_lustre(spec: ClusterSpec, catalog: Catalog) -> LustrePlan | None:
    lustre = spec.storage.lustre
    if lustre is None:
        return None
    efa = lustre_efa_enabled(lustre, spec.region, catalog.regions.get(spec.region))
    return LustrePlan(spec=lustre, efa=efa, per_unit_storage_throughput=resolved_throughput(lustre))


def shared_mounts(spec: ClusterSpec, lustre: LustrePlan | None) -> tuple[MountPlan, ...]:
    """The shared file systems every node mounts: /home on EFS, then Lustre."""
    mounts: list[MountPlan] = []
    if spec.storage.home is not None:
        mounts.append(MountPlan(spec.storage.home.mount, MountKind.EFS, shared=True))
    if lustre is not None:
        mounts.append(MountPlan(lustre.spec.mount, MountKind.LUSTRE, shared=True))
    return tuple(mounts)
