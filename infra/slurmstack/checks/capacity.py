"""Capacity: how each pool's instances are bought, and whether the type is sold that way."""

from __future__ import annotations

from collections.abc import Iterator

from slurmstack.catalog import Catalog, UsageClass
from slurmstack.checks import rule
from slurmstack.checks.common import error, pools_with_facts, suggestion, warning
from slurmstack.findings import Finding
from slurmstack.spec import CapacityType, ClusterSpec

RESERVED = frozenset({CapacityType.CAPACITY_BLOCK, CapacityType.CAPACITY_RESERVATION})

# EC2 Capacity Blocks are sold in 1, 2, 4, 8, 16, 32 or 64 instances, and one Capacity Block
# holds at most 64 (Amazon EC2 User Guide, "Capacity Blocks for ML").
CAPACITY_BLOCK_SIZES = (1, 2, 4, 8, 16, 32, 64)

# The usage class a capacity type buys from (DescribeInstanceTypes: SupportedUsageClasses).
# An On-Demand Capacity Reservation holds on-demand capacity.
USAGE_CLASS = {
    CapacityType.ON_DEMAND: UsageClass.ON_DEMAND,
    CapacityType.CAPACITY_RESERVATION: UsageClass.ON_DEMAND,
    CapacityType.SPOT: UsageClass.SPOT,
    CapacityType.CAPACITY_BLOCK: UsageClass.CAPACITY_BLOCK,
}


# why: Capacity Blocks and ODCRs are targeted reservations; EC2 launches into them only by id.
@rule
def reservation_id_missing(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.pools):
        capacity = pool.capacity
        if capacity.type in RESERVED and capacity.reservation_id is None:
            yield error(
                f"pools[{index}].capacity.reservation_id",
                f"capacity type {capacity.type.value} needs reservation_id (the cr-... id of "
                "the reservation to launch into)",
            )


# why: a reservation id on on_demand/spot is ignored, so the pool would not use the reservation.
@rule
def reservation_id_unused(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.pools):
        capacity = pool.capacity
        if capacity.type not in RESERVED and capacity.reservation_id is not None:
            yield error(
                f"pools[{index}].capacity.reservation_id",
                f"reservation_id {capacity.reservation_id} is ignored for capacity type "
                f"{capacity.type.value}; set type: capacity_reservation (an ODCR) or "
                "capacity_block, or remove reservation_id",
            )


# why: a spot price on other capacity is ignored, which hides a wrong capacity type.
@rule
def spot_price_without_spot(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.pools):
        capacity = pool.capacity
        if capacity.max_spot_price is not None and capacity.type is not CapacityType.SPOT:
            yield error(
                f"pools[{index}].capacity.max_spot_price",
                f"max_spot_price is only used with capacity type spot (type is "
                f"{capacity.type.value}); set type: spot or remove max_spot_price",
            )


# why: Spot never charges more than On-Demand, so a higher cap protects nothing.
@rule
def spot_price_above_on_demand(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for pf in pools_with_facts(spec, catalog):
        cap = pf.pool.capacity.max_spot_price
        price = pf.facts.price
        if cap is None or pf.pool.capacity.type is not CapacityType.SPOT or price is None:
            continue
        if price.region == spec.region and cap > price.usd_per_hour:
            yield warning(
                f"{pf.path}.capacity.max_spot_price",
                f"max_spot_price {cap} is above the on-demand price of "
                f"{pf.pool.instance_type} in {price.region} ({price.usd_per_hour} USD/h), and "
                "Spot never costs more than On-Demand; remove it or set a lower cap",
            )


def _usage_class_rule(
    spec: ClusterSpec, catalog: Catalog, types: frozenset[CapacityType]
) -> Iterator[Finding]:
    for pf in pools_with_facts(spec, catalog):
        kind = pf.pool.capacity.type
        if kind not in types:
            continue
        needed = USAGE_CLASS[kind]
        if needed not in pf.facts.usage_classes:
            offered = ", ".join(sorted(u.value for u in pf.facts.usage_classes)) or "none"
            yield error(
                f"{pf.path}.capacity.type",
                f"{pf.pool.instance_type} is not sold as {needed.value} (it offers: {offered}); "
                "pick another capacity type or instance type",
            )


# why: EC2 refuses a Spot request for a type without the spot usage class (e.g. hpc7a).
@rule
def spot_unsupported(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    yield from _usage_class_rule(spec, catalog, frozenset({CapacityType.SPOT}))


# why: Capacity Blocks exist only for a few accelerated types; others cannot be reserved so.
@rule
def capacity_block_unsupported(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    yield from _usage_class_rule(spec, catalog, frozenset({CapacityType.CAPACITY_BLOCK}))


# why: some types are sold only through Capacity Blocks; on-demand launches (and ODCRs) fail.
@rule
def on_demand_unsupported(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    kinds = frozenset({CapacityType.ON_DEMAND, CapacityType.CAPACITY_RESERVATION})
    yield from _usage_class_rule(spec, catalog, kinds)


# why: plan can only total what has a price; and a type without an on-demand list price may
# be sold only through Capacity Blocks (p5e.48xlarge, trn2.48xlarge), where on-demand fails.
@rule
def on_demand_unpriced(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for pf in pools_with_facts(spec, catalog):
        pool = pf.pool
        if pool.capacity.type is not CapacityType.ON_DEMAND or pf.facts.price is not None:
            continue
        if pool.instance_type in spec.cost.instance_hourly_usd:
            continue
        yield warning(
            f"{pf.path}.capacity.type",
            f"{pool.instance_type} has no on-demand list price, so plan leaves pool "
            f"{pool.name!r} out of the cost total; if AWS sells the type only as Capacity "
            "Blocks (as p5e.48xlarge and trn2.48xlarge), on-demand launches fail: use "
            "capacity_block, or set cost.instance_hourly_usd to the price you pay",
        )


# why: Capacity Block instances are already co-located in an UltraCluster and cannot be placed
# in a cluster placement group (EC2 User Guide, "Work with Capacity Blocks").
@rule
def placement_group_capacity_block(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.pools):
        setting = pool.placement_group
        if pool.capacity.type is CapacityType.CAPACITY_BLOCK and setting not in ("auto", False):
            yield error(
                f"pools[{index}].placement_group",
                "a Capacity Block is already placed close together and takes no placement "
                f"group (got {setting!r}); set placement_group: auto or false",
            )


# why: an existing On-Demand Capacity Reservation cannot be moved into a placement group made
# after it (EC2 User Guide, "Capacity Reservations in cluster placement groups"): instances
# launched into a new group find no reserved capacity and fail with insufficient capacity.
@rule
def placement_group_capacity_reservation(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.pools):
        if pool.capacity.type is CapacityType.CAPACITY_RESERVATION and pool.placement_group is True:
            yield error(
                f"pools[{index}].placement_group",
                "true creates a new placement group, and an existing On-Demand Capacity "
                f"Reservation ({pool.capacity.reservation_id or 'reservation_id'}) cannot move "
                "into a group made after it, so the pool's launches would find no reserved "
                "capacity; give the name of the cluster placement group the reservation was "
                "created in (placement_group: <name>), or set auto or false",
            )


# why: see CAPACITY_BLOCK_SIZES; more nodes than one block holds can never all start, and an
# elastic pool's nodes all launch into the same block, so the block bounds max_count.
@rule
def capacity_block_size(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.pools):
        nodes = pool.max_nodes
        if pool.capacity.type is not CapacityType.CAPACITY_BLOCK or nodes == 0:
            continue
        key = "max_count" if pool.elastic_nodes else "count"
        if nodes > CAPACITY_BLOCK_SIZES[-1]:
            yield error(
                f"pools[{index}].{key}",
                f"{key} {nodes} is more than one Capacity Block holds (64 instances); "
                "split the pool into pools of at most 64, one per Capacity Block",
            )
        elif nodes not in CAPACITY_BLOCK_SIZES:
            yield warning(
                f"pools[{index}].{key}",
                f"{key} {nodes} is not a Capacity Block size (1, 2, 4, 8, 16, 32 or 64); "
                "the block's other instances stay idle but are paid for, or the pool cannot "
                "start all its nodes",
            )


# why: a Spot interruption of one node kills every multi-node job running on it.
@rule
def spot_multi_node_efa(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for pf in pools_with_facts(spec, catalog):
        if pf.pool.capacity.type is CapacityType.SPOT and pf.efa and pf.pool.max_nodes > 1:
            yield warning(
                f"{pf.path}.capacity.type",
                f"pool {pf.pool.name!r} runs multi-node EFA jobs on Spot; one interruption "
                "ends the whole job (checkpoint often, or use on_demand / a reservation)",
            )


# why: a pool of zero nodes, and none elastic, creates a partition where every job pends
# forever.
@rule
def pool_count_zero(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.pools):
        if pool.max_nodes == 0:
            yield warning(
                f"pools[{index}].count",
                f"pool {pool.name!r} has count 0 and no max_count above it; jobs sent to its "
                "partition will pend until count or max_count is raised",
            )


# why: a price override for a type the cluster does not use is most likely a misspelt type.
@rule
def cost_override_unused(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    used = [spec.head_node.instance_type] + [pool.instance_type for pool in spec.pools]
    for name in spec.cost.instance_hourly_usd:
        if name not in used:
            yield warning(
                f"cost.instance_hourly_usd.{name}",
                f"price override for {name!r}, which no node of this cluster uses"
                f"{suggestion(name, sorted(set(used)), catalog)}",
            )
