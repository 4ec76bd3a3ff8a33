"""What `slurmstack plan` says about the node images: each image the cluster bakes (parent,
what goes in, which nodes boot it), what baking costs once, and the nodes that bring their
own image (the contract their boot checks)."""

from __future__ import annotations

from typing import Any

from slurmstack.catalog import load_catalog
from slurmstack.contract import HEAD_ROLE
from slurmstack.plan import ClusterPlan, image_plans, own_ami, role_image_contract
from slurmstack.plan.images import BAKE_MINUTES
from slurmstack.rules.facts import resolve_facts

REUSE = (
    "built at the first `pulumi up`, then kept in the stack's state: later `pulumi up`s reuse "
    "it; it is built again only when image.version or slurmstack's pins (image_pins.json) change"
)


def _hourly(plan: ClusterPlan, instance_type: str) -> float | None:
    override = plan.spec.cost.instance_hourly_usd.get(instance_type)
    if override is not None:
        return override
    facts = resolve_facts(instance_type, None, load_catalog())
    return None if facts is None or facts.price is None else facts.price.usd_per_hour


def images_section(plan: ClusterPlan) -> dict[str, Any]:
    low, high = BAKE_MINUTES
    baked: list[dict[str, Any]] = []
    costs: list[list[float] | None] = []
    for image in image_plans(plan):
        price = _hourly(plan, image.build_instance_type)
        cost = None if price is None else [round(price * low / 60, 2), round(price * high / 60, 2)]
        costs.append(cost)
        baked.append(
            {
                "image": image.key,
                "kind": image.kind.value,
                "architecture": image.architecture.value,
                "parent": image.parent,
                "parent_pinned": image.parent_pin,
                "version": image.version,
                "nodes": list(image.roles),
                "baked": [{"piece": piece, "version": v} for piece, v in image.baked()],
                "build_instance_type": image.build_instance_type,
                "bake_minutes": [low, high],
                "bake_cost_usd": cost,
                "reuse": REUSE,
            }
        )
    own = [
        {"node": role, "ami": ami, "contract": list(role_image_contract(plan, role))}
        for role in (HEAD_ROLE, *(p.name for p in plan.pools))
        if (ami := own_ami(plan, role)) is not None
    ]
    priced = [c for c in costs if c is not None]
    return {
        "baked": baked,
        "own": own,
        # Images build in parallel: the first deploy waits for the slowest.
        "bake_minutes": [low, high] if baked else [0, 0],
        "bake_cost_usd": [round(sum(c[0] for c in priced), 2), round(sum(c[1] for c in priced), 2)],
        "bake_cost_complete": len(priced) == len(costs),
        "basis": (
            "one build instance, then one test instance, of build_instance_type per image for "
            f"{low}-{high} min (slurmstack.plan.images.BAKE_MINUTES); the AMI's snapshot is billed as "
            "EBS snapshot storage while the image is kept"
        ),
    }
