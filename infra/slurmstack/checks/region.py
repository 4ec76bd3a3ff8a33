"""Region and Availability Zone, checked against the catalog's list of Regions and zones."""

from __future__ import annotations

from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error, suggestion
from slurmstack.findings import Finding
from slurmstack.spec import ClusterSpec


def _region_of_zone(zone: str, catalog: Catalog) -> str | None:
    for name, region in catalog.regions.items():
        if zone in region.zones:
            return name
    return None


# why: every regional lookup (AMI parameters, prices, Lustre EFA) needs a Region slurmstack knows.
@rule
def region_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    if spec.region not in catalog.regions:
        known = sorted(catalog.regions)
        # The zone names its region: the likeliest fix of a mistyped one.
        owner = _region_of_zone(spec.availability_zone, catalog)
        hint = (
            f" (did you mean {owner!r}, the region of availability_zone "
            f"{spec.availability_zone!r}?)"
            if owner is not None
            else suggestion(spec.region, known, catalog)
        )
        yield error(
            "region",
            f"unknown region {spec.region!r}{hint}; slurmstack knows {', '.join(known)}",
        )


# why: a subnet or placement group in a zone of another Region fails at deploy time.
@rule
def availability_zone_region(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    if spec.region not in catalog.regions:
        return  # one finding for a mistyped region, region_unknown's
    zone = spec.availability_zone
    owner = _region_of_zone(zone, catalog)
    if owner is not None and owner != spec.region:
        yield error(
            "availability_zone",
            f"availability zone {zone!r} is in region {owner!r}, not in {spec.region!r}; "
            f"pick a zone of {spec.region} or set region: {owner}",
        )
    elif owner is None and not zone.startswith(spec.region):
        yield error(
            "availability_zone",
            f"availability zone {zone!r} does not belong to region {spec.region!r} "
            f"(zones of a region are named after it, e.g. {spec.region}a)",
        )


# why: a zone the Region does not offer (typo, or not offered to new accounts) fails at deploy time.
@rule
def availability_zone_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    region = catalog.regions.get(spec.region)
    zone = spec.availability_zone
    if region is None or zone in region.zones or not zone.startswith(spec.region):
        return  # an unknown region or a zone of another region has its own rule
    zones = list(region.zones)
    yield error(
        "availability_zone",
        f"unknown availability zone {zone!r} in {spec.region}"
        f"{suggestion(zone, zones, catalog)}; the region offers {', '.join(zones)}",
    )


# why: EC2 refuses to launch a type the Region does not offer (hpc7a in us-east-1, p5e in
# most Regions); the Auto Scaling group or the head node would fail at deploy time.
@rule
def instance_type_not_offered(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    if spec.region not in catalog.regions:
        return  # an unknown region has its own rule
    roles = [("head_node", spec.head_node.instance_type, spec.head_node.instance_facts)]
    roles += [
        (f"pools[{i}]", pool.instance_type, pool.instance_facts)
        for i, pool in enumerate(spec.pools)
    ]
    for path, name, given in roles:
        regions = catalog.offered_in(name)
        if given is not None or regions is None or spec.region in regions:
            continue
        where = (
            f"Regions that offer it: {', '.join(regions)}"
            if regions
            else f"none of the {len(catalog.regions)} Regions slurmstack knows offers it"
        )
        yield error(
            f"{path}.instance_type",
            f"{name} is not offered in {spec.region}; {where} (pick one of them as region, "
            "or another instance type)",
        )
