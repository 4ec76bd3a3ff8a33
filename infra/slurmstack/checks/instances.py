"""Instance types: known to the catalog (or described), and used the way the type allows."""

from __future__ import annotations

import re
from collections.abc import Iterator

from slurmstack.catalog import Architecture, Catalog, InstanceFacts
from slurmstack.checks import rule
from slurmstack.checks.common import error, gib, head_facts, pools_with_facts, warning
from slurmstack.findings import Finding
from slurmstack.image_pins import image_pins
from slurmstack.spec import ClusterSpec, RootVolume

# EC2 instance type names are "<family>.<size>" (p5.48xlarge, p6-b200.48xlarge, m7i.large).
INSTANCE_TYPE_PATTERN = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")

# gp3 ratios (Amazon EBS User Guide, "General Purpose SSD volumes",
# https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html#gp3-ebs-volume-type):
# at most 500 IOPS per GiB of volume size, and at most 0.25 MiB/s of throughput per
# provisioned IOPS. The absolute limits (API_CreateVolume) are the bounds of spec.RootVolume.
GP3_MAX_IOPS_PER_GIB = 500
GP3_MAX_MIBPS_PER_IOPS = 0.25

# Head node sizing: slurmctld keeps every node and job in memory and serves every RPC, and it
# shares the head node with the login shell and the config push; below 4 vCPUs / 16 GiB a
# cluster of more than 64 nodes sees slow scheduling passes and RPC timeouts. Below 2 vCPUs /
# 4 GiB even a small cluster starves slurmctld when a user compiles on the head node.
HEAD_LARGE_CLUSTER_NODES = 64
HEAD_MIN_LARGE = (4, 16 * 1024)
HEAD_MIN_ANY = (2, 4 * 1024)


def _instance_types(spec: ClusterSpec) -> Iterator[tuple[str, str, InstanceFacts | None]]:
    """(path prefix, instance type, definition facts) for the head node, every pool and every
    login pool."""
    yield "head_node", spec.head_node.instance_type, spec.head_node.instance_facts
    for index, pool in enumerate(spec.pools):
        yield f"pools[{index}]", pool.instance_type, pool.instance_facts
    for index, login in enumerate(spec.login_pools):
        yield f"login_pools[{index}]", login.instance_type, login.instance_facts


# why: without facts slurmstack cannot size Slurm nodes, GRES or the EFA layout.
@rule
def instance_type_unknown(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, name, given in _instance_types(spec):
        if given is None and catalog.instance(name) is None:
            close = catalog.suggest_instance_type(name)
            hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
            yield error(
                f"{path}.instance_type",
                f"unknown instance type {name!r}; {hint}add instance_facts to describe a type "
                "the catalog lacks",
            )


# why: a described type with a malformed name passes slurmstack but fails in EC2's launch template.
@rule
def instance_type_form(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, name, given in _instance_types(spec):
        if given is not None and not INSTANCE_TYPE_PATTERN.match(name):
            yield error(
                f"{path}.instance_type",
                f"instance type {name!r} is not an EC2 type name (family.size, e.g. "
                "p5.48xlarge: lowercase letters, digits and '-', one '.')",
            )


# why: definition facts silently replace the catalog's checked facts for that type.
@rule
def instance_facts_shadow(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, name, given in _instance_types(spec):
        if given is not None and catalog.instance(name) is not None:
            yield warning(
                f"{path}.instance_facts",
                f"the catalog already knows {name!r}; these facts replace the catalog's "
                "(remove instance_facts to use the checked catalog entry)",
            )


# why: slurmd drains a node whose CPUs do not match Sockets x CoresPerSocket x ThreadsPerCore.
@rule
def instance_facts_cpu_layout(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, _name, given in _instance_types(spec):
        if given is None:
            continue
        if given.vcpus != given.cores * given.threads_per_core:
            yield error(
                f"{path}.instance_facts.vcpus",
                f"vcpus {given.vcpus} is not cores x threads_per_core "
                f"({given.cores} x {given.threads_per_core} = "
                f"{given.cores * given.threads_per_core}); Slurm would drain the node",
            )
        if given.cores % given.sockets:
            yield error(
                f"{path}.instance_facts.sockets",
                f"cores {given.cores} do not divide evenly over {given.sockets} sockets; "
                "Slurm needs the same CoresPerSocket on every socket",
            )


# why: the EFA interface layout is built from max_efa_interfaces; the two fields must agree.
@rule
def instance_facts_efa(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, _name, given in _instance_types(spec):
        if given is None:
            continue
        if given.efa_supported and given.max_efa_interfaces < 1:
            yield error(
                f"{path}.instance_facts.max_efa_interfaces",
                "efa_supported is true but max_efa_interfaces is 0; give the type's EFA "
                "interface count (DescribeInstanceTypes: EfaInfo.MaximumEfaInterfaces)",
            )
        if not given.efa_supported and given.max_efa_interfaces > 0:
            yield error(
                f"{path}.instance_facts.efa_supported",
                f"max_efa_interfaces is {given.max_efa_interfaces} but efa_supported is false; "
                "set efa_supported: true or max_efa_interfaces: 0",
            )


# why: GPUDirect RDMA is a property of EFA between GPUs; the flag alone would enable
# FI_EFA_USE_DEVICE_RDMA where there is no device to use.
@rule
def instance_facts_gpudirect(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, _name, given in _instance_types(spec):
        if given is None or not given.gpudirect_rdma:
            continue
        if not given.efa_supported or given.accelerator is None:
            yield error(
                f"{path}.instance_facts.gpudirect_rdma",
                "gpudirect_rdma needs an EFA-capable type with accelerators "
                "(efa_supported: true and an accelerator); set gpudirect_rdma: false",
            )


# why: AWS refuses an EFA interface on a type without EFA (launch fails for every node).
@rule
def efa_unsupported(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for pf in pools_with_facts(spec, catalog):
        if pf.pool.efa is True and not pf.facts.efa_supported:
            yield error(
                f"{pf.path}.efa",
                f"efa is true but {pf.pool.instance_type} does not support EFA; set efa: auto "
                "or false, or pick an EFA type (e.g. p5.48xlarge, g6e.8xlarge and larger)",
            )


# why: multi-node jobs on an EFA-capable type without EFA use TCP (ParallelCluster warns too).
@rule
def efa_disabled(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for pf in pools_with_facts(spec, catalog):
        if pf.pool.efa is False and pf.facts.efa_supported and pf.pool.max_nodes > 1:
            yield warning(
                f"{pf.path}.efa",
                f"{pf.pool.instance_type} supports EFA but efa is false; multi-node jobs in "
                f"pool {pf.pool.name!r} will use TCP (set efa: auto to use the fabric)",
            )


# why: the RAID0 scratch array is built from instance NVMe disks; without them boot fails.
@rule
def local_scratch_no_nvme(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for pf in pools_with_facts(spec, catalog):
        if pf.pool.local_scratch is not None and pf.facts.nvme is None:
            yield error(
                f"{pf.path}.local_scratch",
                f"{pf.pool.instance_type} has no instance NVMe disks for local scratch at "
                f"{pf.pool.local_scratch}; remove local_scratch or pick a type with NVMe "
                "(e.g. the d or n variants, p/g/trn types)",
            )


# why: an accelerator on the head node is paid for and never scheduled.
@rule
def head_node_accelerator(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    facts = head_facts(spec, catalog)
    if facts is not None and facts.accelerator is not None:
        acc = facts.accelerator
        yield warning(
            "head_node.instance_type",
            f"head node {spec.head_node.instance_type} has {acc.count} {acc.model} "
            "accelerators that Slurm never schedules; a CPU type (e.g. m7i.4xlarge) costs less",
        )


# why: slurmctld shares the head node with the login shell; see HEAD_* above.
@rule
def head_node_small(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    facts = head_facts(spec, catalog)
    if facts is None:
        return
    nodes = sum(pool.max_nodes for pool in spec.pools)
    vcpus, mib = HEAD_MIN_LARGE if nodes > HEAD_LARGE_CLUSTER_NODES else HEAD_MIN_ANY
    if facts.vcpus < vcpus or facts.memory_mib < mib:
        yield warning(
            "head_node.instance_type",
            f"head node {spec.head_node.instance_type} ({facts.vcpus} vCPUs, "
            f"{gib(facts.memory_mib)}) is small for {nodes} nodes; give slurmctld at least "
            f"{vcpus} vCPUs and {gib(mib)} (e.g. m7i.xlarge or larger)",
        )


# why: Slurm itself works across architectures, but software built on the head (login) node
# will not run on pools of the other architecture.
@rule
def head_architecture_mismatch(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    facts = head_facts(spec, catalog)
    if facts is None:
        return
    for pf in pools_with_facts(spec, catalog):
        if pf.facts.architecture is not facts.architecture:
            yield warning(
                f"{pf.path}.instance_type",
                f"pool {pf.pool.name!r} is {pf.facts.architecture.value} but the head node is "
                f"{facts.architecture.value}; programs built on the head node will not run "
                "there (build on the pool's nodes, or match the architectures)",
            )


# why: the default accelerated image is looked up through an x86_64-only SSM parameter, so an
# arm64 accelerated pool would boot an image of the wrong architecture.
@rule
def default_ami_architecture(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for pf in pools_with_facts(spec, catalog):
        facts = pf.facts
        own = pf.pool.ami or spec.image.ami
        if own is None and facts.accelerator and facts.architecture is Architecture.ARM64:
            yield error(
                f"{pf.path}.ami",
                f"{pf.pool.instance_type} is arm64, but the default Deep Learning AMI is "
                "x86_64; bring an arm64 accelerated image of your own with ami: ami-...",
            )


def _image_kind(facts: InstanceFacts) -> str:
    """The kind of image slurmstack bakes for a node of this type (the plan's kind_of)."""
    if facts.accelerator is None:
        return "cpu"
    return "neuron" if facts.accelerator.kind == "neuron" else "nvidia"


# why: EC2 refuses a root volume smaller than the AMI's root snapshot ("Volume of size N GB is
# smaller than snapshot"), so every launch of the pool (or the head) would fail; the baked
# images' snapshots are their build volumes (image_pins.json, root_volume_gib).
@rule
def root_volume_image_snapshot(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    snapshots = image_pins()["root_volume_gib"]
    head = spec.head_node
    roles: list[tuple[str, str | None, RootVolume, InstanceFacts | None]] = [
        ("head_node", head.ami, head.root_volume, head_facts(spec, catalog))
    ]
    roles += [
        (pf.path, pf.pool.ami, pf.pool.root_volume, pf.facts)
        for pf in pools_with_facts(spec, catalog)
    ]
    for path, ami, volume, facts in roles:
        if facts is None or (ami or spec.image.ami) is not None:
            continue  # unknown type (its own finding), or an AMI of its own: its size is unknown
        kind = _image_kind(facts)
        need = int(snapshots[kind])
        if volume.size_gib < need:
            yield error(
                f"{path}.root_volume.size_gib",
                f"root volume of {volume.size_gib} GiB is smaller than the {need} GiB root "
                f"snapshot of the {kind} image slurmstack bakes, and EC2 refuses such a launch; "
                f"set size_gib to at least {need} (or bring an ami of your own)",
            )


def _root_volumes(spec: ClusterSpec) -> Iterator[tuple[str, RootVolume]]:
    yield "head_node.root_volume", spec.head_node.root_volume
    for index, pool in enumerate(spec.pools):
        yield f"pools[{index}].root_volume", pool.root_volume


# why: EBS refuses a gp3 volume with more than 500 IOPS per GiB (see GP3_* above).
@rule
def root_volume_iops_ratio(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, volume in _root_volumes(spec):
        most = volume.size_gib * GP3_MAX_IOPS_PER_GIB
        if volume.iops > most:
            need = -(-volume.iops // GP3_MAX_IOPS_PER_GIB)
            yield error(
                f"{path}.iops",
                f"{volume.iops} IOPS on a {volume.size_gib} GiB gp3 volume exceeds 500 IOPS "
                f"per GiB ({most}); lower iops or raise size_gib to at least {need}",
            )


# why: EBS refuses a gp3 volume with more than 0.25 MiB/s of throughput per IOPS.
@rule
def root_volume_throughput_ratio(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, volume in _root_volumes(spec):
        most = volume.iops * GP3_MAX_MIBPS_PER_IOPS
        if volume.throughput_mibps > most:
            need = int(volume.throughput_mibps / GP3_MAX_MIBPS_PER_IOPS)
            yield error(
                f"{path}.throughput_mibps",
                f"{volume.throughput_mibps} MiB/s needs at least {need} IOPS on gp3 "
                f"(0.25 MiB/s per IOPS; iops is {volume.iops}); raise iops or lower "
                "throughput_mibps",
            )
