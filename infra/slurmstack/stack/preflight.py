"""Problems only the stack can see, found before any resource is registered, so a deploy
never stops half-way on them. Each is a `path: message` line, like the checks' findings."""

from __future__ import annotations

from slurmstack.image_pins import pin_problems
from slurmstack.plan import ClusterPlan, image_plans


def preflight(plan: ClusterPlan, provider_region: str | None) -> list[str]:
    problems: list[str] = []
    # Resources land in the provider's region (stack config aws:region); a definition for
    # another region would put subnets in an AZ that region does not have.
    if provider_region is not None and provider_region != plan.region:
        problems.append(
            f"region: {plan.region!r} differs from the stack's aws:region "
            f"{provider_region!r}; set them to the same region"
        )
    # The bake refuses an unpinned download on the build instance, after the VPC, FSx and the
    # rest are made: refuse it here, before any of them (validate's image-downloads-pinned
    # says the same; this holds even for a program that skipped the checks).
    if image_plans(plan):
        problems += [f"image: unpinned download in image_pins.json: {p}" for p in pin_problems()]
    return problems
