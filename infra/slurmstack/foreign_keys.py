"""Keys a new user brings from other cluster tools (ParallelCluster, Cluster Toolkit, Slurm
itself) for something slurmstack does differently or not at all. For these the loader says
what slurmstack does instead, rather than suggest the nearest key of the same spelling (a
pool's `instance_types` is no typo for `instance_type`: it asks for a feature)."""

from __future__ import annotations

POOLS_INSTEAD = (
    "slurmstack calls these pools: each pool is one instance type, one Auto Scaling group and "
    "one Slurm partition of the same name (pools: [{name, instance_type, count}])"
)

# (model class that refused the key, key) -> what slurmstack does instead.
NOT_SLURMSTACK: dict[tuple[str, str], str] = {
    ("ClusterSpec", "login_nodes"): (
        "slurmstack has no separate login nodes: users log in to the head node (SSM Session "
        "Manager, or SSH from network.ssh_cidrs) and submit their jobs there"
    ),
    ("ClusterSpec", "availability_zones"): (
        "a cluster lives in one availability zone (its placement groups and Lustre file system "
        "are zonal); set availability_zone"
    ),
    ("ClusterSpec", "queues"): POOLS_INSTEAD,
    ("ClusterSpec", "partitions"): POOLS_INSTEAD,
    ("ClusterSpec", "compute_resources"): POOLS_INSTEAD,
    ("ClusterSpec", "node_groups"): POOLS_INSTEAD,
    ("ClusterSpec", "users"): (
        "slurmstack creates no Linux user accounts; Slurm's accounting users are listed per "
        "account, under slurm.accounting.accounts[].users"
    ),
    ("ClusterSpec", "shared_storage"): (
        "shared storage is storage: lustre (FSx for Lustre), home (EFS at /home) and bucket (S3)"
    ),
    ("PoolSpec", "instance_types"): (
        "a pool has one instance_type (Slurm needs one node shape per partition); declare one "
        "pool per type"
    ),
    ("PoolSpec", "min_count"): (
        "count is a pool's always-running nodes (its minimum), max_count its most; elastic "
        "nodes in between start for pending jobs"
    ),
    ("PoolSpec", "availability_zone"): (
        "every pool runs in the cluster's one availability_zone (a top-level key)"
    ),
    ("PoolSpec", "subnet_id"): (
        "every pool runs in the cluster's compute subnet (network.compute_subnet_id for an "
        "existing VPC)"
    ),
    ("PoolSpec", "spot_price"): "Spot is a capacity: capacity: {type: spot, max_spot_price: ...}",
    ("PoolSpec", "spot"): "Spot is a capacity: capacity: {type: spot}",
    ("HeadNodeSpec", "count"): "a cluster has one head node",
}


def not_slurmstack(model: str, key: str) -> str | None:
    """What slurmstack does instead of the feature ``key`` asks for in ``model``, if known."""
    return NOT_SLURMSTACK.get((model, key))
