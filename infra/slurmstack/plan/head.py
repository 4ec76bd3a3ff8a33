"""What the plan decides about the head node."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.catalog import InstanceFacts
from slurmstack.spec import RootVolume


@dataclass(frozen=True)
class HeadPlan:
    instance_type: str
    facts: InstanceFacts
    ami: str | None  # the definition's own AMI for this node (slurmstack.plan.images decides)
    root_volume: RootVolume
    state_volume_gib: int
