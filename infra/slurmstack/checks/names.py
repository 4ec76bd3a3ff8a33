"""Names: the cluster and its pools end up in Slurm, in AWS resource names and in tags."""

from __future__ import annotations

from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error
from slurmstack.contract import HEAD_ROLE
from slurmstack.findings import Finding
from slurmstack.spec import ClusterSpec

# The cluster bucket is named after the cluster ({cluster}-...), and S3 refuses bucket names
# that start with these prefixes (Amazon S3 User Guide, "General purpose bucket naming rules").
S3_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
# The cluster's SSM documents are named after the cluster too, and SSM refuses document names
# that start with these (AWS Systems Manager API Reference, CreateDocument, Name: "You can't
# use the following strings as document name prefixes. These are reserved by AWS for use as
# document name prefixes: aws, amazon, amzn"; case-insensitive).
SSM_RESERVED_PREFIXES = ("aws", "amazon", "amzn")

# Pool names become Slurm partition, node set and feature names, and the value of the
# slurmstack:role tag on the pool's resources. Names Slurm reads as keywords, or that
# slurmstack uses for its own roles, would make a pool look like something else.
RESERVED_POOL_NAMES = {
    "default": "PartitionName=DEFAULT and NodeName=DEFAULT set Slurm defaults, not a partition",
    "all": "ALL is Slurm's keyword for every node (Nodes=ALL; NodeName=ALL is a fatal error)",
    HEAD_ROLE: "'head' is the slurmstack:role of the head node; its SSM commands and IAM "
    "conditions select resources by that tag",
    "login": "'login' is reserved for slurmstack's login-node role",
}


# why: AWS refuses the bucket (S3 naming rules) only at deploy time, after other resources exist.
@rule
def cluster_name_s3_prefix(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for prefix in S3_RESERVED_PREFIXES:
        if spec.name.startswith(prefix):
            yield error(
                "name",
                f"cluster name {spec.name!r} starts with {prefix!r}, which S3 reserves; the "
                "cluster bucket is named after the cluster, so choose a name without that prefix",
            )


# why: SSM refuses the cluster's documents only at deploy time, after other resources exist.
@rule
def cluster_name_ssm_prefix(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for prefix in SSM_RESERVED_PREFIXES:
        if spec.name.lower().startswith(prefix):
            yield error(
                "name",
                f"cluster name {spec.name!r} starts with {prefix!r}, which AWS Systems Manager "
                "reserves for its own document names (aws, amazon, amzn); the cluster's SSM "
                "documents are named after the cluster, so choose a name without that prefix",
            )
            return


# why: two pools with one name would share a partition, a node set and every AWS resource name.
@rule
def pool_name_duplicate(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    first: dict[str, int] = {}
    for index, pool in enumerate(spec.pools):
        if pool.name in first:
            yield error(
                f"pools[{index}].name",
                f"pool name {pool.name!r} is already used by pools[{first[pool.name]}]; "
                "every pool needs its own name (it is its Slurm partition)",
            )
        else:
            first[pool.name] = index


# why: a reserved name makes slurmctld misread the partition or slurmstack misroute commands.
@rule
def pool_name_reserved(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for index, pool in enumerate(spec.pools):
        reason = RESERVED_POOL_NAMES.get(pool.name.lower())
        if reason is not None:
            yield error(
                f"pools[{index}].name",
                f"pool name {pool.name!r} is reserved ({reason}); choose another name",
            )
