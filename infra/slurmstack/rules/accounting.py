"""Accounting rules the checks and the plan share (slurmstack.checks.accounting,
slurmstack.plan.accounting): the TRES a cluster records, and where a new VPC has room for an
RDS database's subnets. Pure: no Pulumi import. Slurm's own root account and normal QoS are
the contract's (ROOT_ACCOUNT, DEFAULT_QOS): the head's agent keeps off them too.
"""

from __future__ import annotations

import ipaddress

from slurmstack.catalog import Catalog
from slurmstack.rules.subnets import carve
from slurmstack.spec import ClusterSpec

# Plain TRES a limit may name besides the pools' GRES (mem in MiB).
BASE_TRES = ("cpu", "mem", "node", "billing")

# A DB subnet group spans at least two zones (RDS User Guide, "Working with a DB instance in a
# VPC"); a new VPC gets two subnets of this size for it, outside the compute and public ones.
RDS_SUBNET_PREFIX = 28
# RDS for MariaDB master user names: 1 to 16 letters and digits (CreateDBInstance).
RDS_MAX_USER_LENGTH = 16


def tracked_gres(accelerators: list[tuple[str, str]]) -> tuple[str, ...]:
    """AccountingStorageTRES from (GRES name, type) per accelerator pool: gres/gpu always (a
    GPU pool may be added later), each kind untyped (every device of it, whatever the type the
    job asked for), and each kind:type (only jobs that asked for that type; slurm.conf(5))."""
    names = {"gres/gpu"}
    for gres, gres_type in accelerators:
        names |= {f"gres/{gres}", f"gres/{gres}:{gres_type}"}
    return tuple(sorted(names))


def known_tres(accelerators: list[tuple[str, str]]) -> tuple[str, ...]:
    """TRES a limit may name on this cluster."""
    return (*BASE_TRES, *tracked_gres(accelerators))


def rds_subnets(
    vpc: ipaddress.IPv4Network | None,
    taken: list[ipaddress.IPv4Network],
    zone: str,
    zones: list[str],
) -> tuple[tuple[ipaddress.IPv4Network, str], ...]:
    """Two subnets for a new VPC's DB subnet group: the first two /28 blocks of the VPC that
    overlap none of ``taken`` (the compute and public subnets), in the cluster's zone and the
    next zone of the region; () when the VPC or the region has no room for them."""
    other = [z for z in zones if z != zone]
    if vpc is None or not other or vpc.prefixlen > RDS_SUBNET_PREFIX:
        return ()
    free = [
        block
        for block in vpc.subnets(new_prefix=RDS_SUBNET_PREFIX)
        if not any(block.overlaps(t) for t in taken)
    ]
    if len(free) < 2:
        return ()
    return ((free[0], zone), (free[1], other[0]))


def spec_rds_subnets(
    spec: ClusterSpec, catalog: Catalog
) -> tuple[tuple[ipaddress.IPv4Network, str], ...]:
    """rds_subnets of the definition's new VPC (slurmstack.rules.subnets carves it)."""
    vpc, public, compute = carve(spec)
    region = catalog.regions.get(spec.region)
    zones = list(region.zones) if region is not None else []
    taken = [n for n in (compute, public) if n is not None]
    return rds_subnets(vpc, taken, spec.availability_zone, zones)


# slurmdbd's own advice (accounting_storage_mysql.c, _check_database_variables) is an InnoDB
# buffer pool of 4 GiB; below half of that it logs "Database settings not recommended
# values: innodb_buffer_pool_size" at every start. Slurm's accounting guide asks for 5 to 50%
# of the server's memory and at least 4 GiB. On the head node MariaDB shares the memory with
# slurmctld and slurmdbd, so its buffer pool is held to an eighth of it, and at least 128 MiB.
INNODB_BUFFER_POOL_MAX_MIB = 4096
INNODB_BUFFER_POOL_MIN_MIB = 128
SLURMDBD_BUFFER_POOL_FLOOR_MIB = INNODB_BUFFER_POOL_MAX_MIB // 2
HEAD_MEMORY_SHARE_OF_BUFFER_POOL = 8


def buffer_pool_mib(head_memory_mib: int) -> int:
    """MariaDB's buffer pool on a head node of ``head_memory_mib``: an eighth, in 128 MiB
    steps, between 128 MiB and slurmdbd's 4 GiB."""
    eighth = head_memory_mib // HEAD_MEMORY_SHARE_OF_BUFFER_POOL // 128 * 128
    return max(INNODB_BUFFER_POOL_MIN_MIB, min(INNODB_BUFFER_POOL_MAX_MIB, eighth))
