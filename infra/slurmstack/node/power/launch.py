"""How an elastic node's instance is launched: EC2 Fleet requests of type instant (power.units
says which nodes go in each), from the pool's own launch template (its image, user data,
interfaces, EFA layout, placement group, root volume, instance profile, metadata options and,
for Capacity Blocks and Capacity Reservations, the reservation), into the compute subnet,
bought as the pool's capacity type says. Pure: the request and the reading of the answer; resume.py sends it.

Why a fleet of type instant and not the pool's Auto Scaling group: it is one synchronous call
that returns the instances it launched, and for those it could not, EC2's own error (code and
message) per launch specification, which becomes the nodes' reason; a group would launch
asynchronously, report a shortage only in its activity history, and choose itself which
instance to stop when it shrinks, where Slurm must say which node goes. Why not RunInstances:
its subnet cannot be given next to a template that has network interfaces (every EFA layout
has them), while a fleet override can.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...contract import LAUNCH_TAG, ElasticPool

# EC2 Fleet's DefaultTargetCapacityType per capacity type of the definition. The launch
# template says the rest: a Capacity Block pool's template has MarketType capacity-block and
# the block's id (EC2 User Guide, "Launch instances into Capacity Blocks" with EC2 Fleet),
# a Capacity Reservation pool's targets its reservation, which the fleet uses first
# (OnDemandOptions.CapacityReservationOptions). A spot pool's template carries no market
# options: the fleet (and the group, through its mixed instances policy) asks for Spot itself.
TARGET_CAPACITY_TYPE = {
    "on_demand": "on-demand",
    "spot": "spot",
    "capacity_block": "capacity-block",
    "capacity_reservation": "on-demand",
}
# One type, one zone: the pool's (what MinTargetCapacity requires). MinTargetCapacity is the
# request's minimum: 1 for a best-effort request (whatever EC2 can launch runs jobs now; the
# rest of the nodes go DOWN with EC2's error and are retried), all of them for an exclusive
# multi-node job's (EC2 launches none unless it can launch every one).
SINGLE_POOL = {"SingleInstanceType": True, "SingleAvailabilityZone": True}
SPOT_ALLOCATION = "price-capacity-optimized"
# The pool's launch template as the stack last wrote it (the stack sets each new version as
# the default: update_default_version).
TEMPLATE_VERSION = "$Default"


def fleet_request(
    pool: ElasticPool, subnet_id: str, count: int, token: str, minimum: int = 1
) -> dict[str, Any]:
    """The CreateFleet request that launches ``count`` instances for ``pool``, none unless at
    least ``minimum``. ``token`` is the request's idempotency token (a retried request launches
    nothing twice) and the launch's id (LAUNCH_TAG), under which the head names its nodes."""
    override: dict[str, Any] = {"SubnetId": subnet_id, "InstanceType": pool.instance_type}
    if pool.placement_group:
        override["Placement"] = {"GroupName": pool.placement_group}
    if pool.max_spot_price and pool.capacity == "spot":
        override["MaxPrice"] = pool.max_spot_price
    target = TARGET_CAPACITY_TYPE[pool.capacity]
    request: dict[str, Any] = {
        "Type": "instant",
        "ClientToken": token,
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {
                    "LaunchTemplateName": pool.launch_template,
                    "Version": TEMPLATE_VERSION,
                },
                "Overrides": [override],
            }
        ],
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": count,
            "DefaultTargetCapacityType": target,
        },
        # The instances get the pool's tags (ELASTIC_TAG among them) and the launch's id at
        # launch, and so does the fleet request: the head's role may launch nothing that is not
        # the cluster's.
        "TagSpecifications": [
            {
                "ResourceType": kind,
                "Tags": [
                    {"Key": k, "Value": v} for k, v in {**pool.tags, LAUNCH_TAG: token}.items()
                ],
            }
            for kind in ("instance", "fleet")
        ],
    }
    single = {**SINGLE_POOL, "MinTargetCapacity": max(1, min(minimum, count))}
    if target == "spot":
        request["SpotOptions"] = {"AllocationStrategy": SPOT_ALLOCATION, **single}
    else:
        options: dict[str, Any] = dict(single)
        if pool.capacity == "capacity_reservation":
            options["CapacityReservationOptions"] = {
                "UsageStrategy": "use-capacity-reservations-first"
            }
        request["OnDemandOptions"] = options
    return request


@dataclass(frozen=True)
class FleetResult:
    instance_ids: tuple[str, ...]
    errors: tuple[tuple[str, str], ...]  # (code, message), as EC2 reported them

    def error_text(self) -> str:
        """EC2's errors as a node's reason says them: the first of each code."""
        seen: dict[str, str] = {}
        for code, message in self.errors:
            seen.setdefault(code, message)
        return "; ".join(f"{code}: {message}" for code, message in seen.items())


def fleet_result(response: dict[str, Any]) -> FleetResult:
    ids = [i for group in response.get("Instances") or [] for i in group.get("InstanceIds", [])]
    errors = [
        (str(e.get("ErrorCode", "")), str(e.get("ErrorMessage", "")))
        for e in response.get("Errors") or []
    ]
    return FleetResult(tuple(ids), tuple(errors))
