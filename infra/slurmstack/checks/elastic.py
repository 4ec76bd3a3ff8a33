"""Elastic pools: the part of a pool above its count (max_count - count), started for pending
jobs by Slurm's power saving and stopped when idle (slurmstack.node.power)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error, warning
from slurmstack.checks.tags import MAX_TAGS, SLURMSTACK_TAG_KEYS
from slurmstack.contract import ELASTIC_TAG, LAUNCH_TAG
from slurmstack.findings import Finding
from slurmstack.spec import CapacityType, ClusterSpec

# The tags an elastic instance carries besides every pool instance's: which pool launched it,
# and the launch (whose object in the bucket names its Slurm node).
ELASTIC_TAG_KEYS = (ELASTIC_TAG, LAUNCH_TAG)
# An elastic pool's instances have their tags in the instance metadata (that is how an elastic
# node knows its launch with no API call), and EC2 then refuses to launch an instance with a tag
# key of other characters than these, a key of only "." or "..", or "_index" (EC2 User Guide,
# "View tags for your EC2 instances using instance metadata").
METADATA_TAG_KEY = re.compile(r"^[A-Za-z0-9+\-=.,_:@]+$")
METADATA_TAG_KEYS_REFUSED = frozenset({".", "..", "_index"})


# why: max_count is the pool's most nodes; below count, Slurm would be given fewer nodes than
# the Auto Scaling group keeps running.
@rule
def max_count_below_count(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.pools):
        if pool.max_count is not None and pool.max_count < pool.count:
            yield error(
                f"pools[{index}].max_count",
                f"max_count {pool.max_count} is below count {pool.count}: max_count is the "
                f"most nodes pool {pool.name!r} may have, count the ones always running; set "
                f"max_count to {pool.count} or more, or lower count",
            )


# why: EC2 refuses a tag set of more than 50 user tags (TagLimitExceeded), and an elastic
# instance carries two more of slurmstack's than the pool's always-on ones: every launch of
# the pool's elastic nodes would fail.
@rule
def elastic_tag_count(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    if not any(pool.elastic_nodes for pool in spec.pools):
        return
    room = MAX_TAGS - len(SLURMSTACK_TAG_KEYS) - len(ELASTIC_TAG_KEYS)
    if len(spec.tags) > room:
        yield error(
            "tags",
            f"{len(spec.tags)} tags, but an elastic node's instance holds {MAX_TAGS} and "
            f"slurmstack adds {len(SLURMSTACK_TAG_KEYS) + len(ELASTIC_TAG_KEYS)} "
            f"({', '.join((*SLURMSTACK_TAG_KEYS, *ELASTIC_TAG_KEYS))}); keep at most {room}",
        )


# why: EC2 refuses every launch of an instance whose tags are in its metadata when a tag key
# has a space or a "/" (and the like): the pool's elastic nodes would never start.
@rule
def elastic_tag_keys(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    if not any(pool.elastic_nodes for pool in spec.pools):
        return
    for key in spec.tags:
        if not METADATA_TAG_KEY.match(key) or key in METADATA_TAG_KEYS_REFUSED:
            yield error(
                f"tags.{key}",
                f"tag key {key!r} cannot be in the instance metadata, where an elastic node "
                "reads its tags (EC2 refuses to launch it: only letters, digits and + - = . , "
                "_ : @, not '.', '..' or '_index'); rename the key, e.g. "
                f"{re.sub(r'[^A-Za-z0-9+=.,_:@-]', '-', key)!r}",
            )


# why: a Capacity Block is paid for its whole term whether instances run in it or not, so
# stopping idle nodes saves nothing; plan counts the reserved part in the idle cost. (An
# elastic On-Demand Capacity Reservation pool is refused: elastic_capacity_reservation.)
@rule
def elastic_reserved_capacity(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.pools):
        if pool.elastic_nodes and pool.capacity.type is CapacityType.CAPACITY_BLOCK:
            yield warning(
                f"pools[{index}].max_count",
                f"pool {pool.name!r} is elastic on {pool.capacity.type.value}, which is paid "
                "whether its nodes run or not: stopping idle nodes saves nothing; set count "
                "to max_count unless the reservation starts later than the cluster",
            )


# Elastic nodes are launched by an EC2 Fleet of type instant (slurmstack.node.power.launch),
# and EC2 Fleet uses On-Demand Capacity Reservations only through its
# use-capacity-reservations-first strategy, which draws on open reservations (EC2 User Guide,
# "Use Capacity Reservations in EC2 Fleet"); it does not launch into a reservation targeted
# by id as the pool's launch template asks. The pool's Auto Scaling group does.
# why: every elastic launch of such a pool would fail, or run outside the reservation.
@rule
def elastic_capacity_reservation(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.pools):
        if pool.elastic_nodes and pool.capacity.type is CapacityType.CAPACITY_RESERVATION:
            yield error(
                f"pools[{index}].max_count",
                f"pool {pool.name!r} is elastic on a capacity_reservation, but its elastic "
                "nodes are launched by EC2 Fleet, which cannot target a Capacity Reservation "
                "by id (EC2 User Guide, 'Use Capacity Reservations in EC2 Fleet': open "
                "reservations only); set max_count to count (the pool's Auto Scaling group "
                "launches into the reservation by id), or make the reservation open and use "
                "capacity: {type: on_demand}, whose launches use an open reservation first",
            )
