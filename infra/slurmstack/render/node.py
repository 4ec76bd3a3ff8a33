"""The node agent's files: node.json (the contract's NodeConfig, from the plan) and the
agent itself, its launcher and its modules, which every role receives."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from slurmstack.contract import (
    AGENT_LIB_DIR,
    AGENT_PACKAGE,
    AGENT_PATH,
    COMMAND_DIRS,
    ELASTIC_TAG,
    HEAD_ROLE,
    HEALTH_CHECK_PROGRAM,
    POOL_ROLE,
    POOL_TAG,
    STATE_SAVE_LOCATION,
    STATE_VOLUME_DEVICE,
    STATE_VOLUME_MOUNT,
    Command,
    ElasticPool,
    Mount,
    MountKind,
    NodeConfig,
    PoolRef,
    S3Mount,
    Scratch,
    StateVolume,
    node_name_prefix,
    resource_name,
    resource_tags,
)
from slurmstack.plan import ClusterPlan, MountPlan, PoolPlan, S3MountPlan
from slurmstack.plan.topology import block_pools, placed_pools
from slurmstack.render.templates import PACKAGE_DIR, render_template

# The node agent's tree on a node: this package's __init__, the contract package and slurmstack/node
# and its subpackages (all but the bootstrap), below AGENT_LIB_DIR as the package has them.
AGENT_DIR = f"{AGENT_LIB_DIR}/{AGENT_PACKAGE}"
NODE_DIR = PACKAGE_DIR / "node"
BOOTSTRAP_SOURCE = NODE_DIR / "bootstrap.py"


def node_config(plan: ClusterPlan, pool: PoolPlan | None) -> NodeConfig:
    """What the node agent needs to know about its role (node.json): the head node's
    (``pool`` None) or a node's of ``pool``."""
    scratch_path = pool.local_scratch_mount.path if pool and pool.local_scratch_mount else None
    common = NodeConfig(
        cluster=plan.name,
        region=plan.region,
        role=HEAD_ROLE if pool is None else pool.name,
        parameter_prefix=plan.parameter_prefix,
        munge_secret=plan.munge_secret_name,
        mounts=file_system_mounts(pool.mounts if pool is not None else plan.mounts),
        s3_mounts=tuple(s3_mount(m, scratch_path) for m in plan.s3_mounts),
        backup=plan.head.backup,
    )
    if pool is None:
        return replace(
            common,
            state_volume=StateVolume(
                STATE_VOLUME_DEVICE,
                STATE_VOLUME_MOUNT,
                STATE_SAVE_LOCATION,
                on_efs=plan.head.backup,
            ),
            # The controller looks after these pools' nodes only.
            pools=tuple(pool_ref(plan, p) for p in plan.pools),
            elastic_pools=tuple(elastic_pool(plan, p) for p in plan.elastic_pools),
            repair=plan.health.repair,
        )
    scratch = pool.local_scratch_mount
    return replace(
        common,
        node_name_prefix=node_name_prefix(pool.name),
        scratch=Scratch(scratch.path) if scratch is not None else None,
        health=plan.health.node_health(
            pool.expected_gpus, pool.expected_neuron_devices, pool.expected_efa_devices
        ),
        # EFA interfaces LNet uses for Lustre; 0: the pool mounts Lustre over TCP.
        lustre_efa_interfaces=pool.lustre_efa_interfaces if plan.lustre is not None else None,
        elastic=pool.elastic,
    )


def file_system_mounts(mounts: tuple[MountPlan, ...]) -> tuple[Mount, ...]:
    """The shared file systems of a role's node.json (the mounts step): the NVMe scratch is the
    scratch step's, the buckets Mountpoint mounts are the s3-mounts step's."""
    return tuple(
        Mount(m.kind, m.path, m.file_system_id or "", m.export_path)
        for m in mounts
        if m.kind not in (MountKind.NVME_RAID0, MountKind.MOUNTPOINT_S3)
    )


def s3_mount(mount: S3MountPlan, scratch: str | None) -> S3Mount:
    """A Mountpoint mount as the agent's s3-mounts step runs it on a node whose NVMe scratch
    (None: the head node, or a pool without one) may hold its cache."""
    return S3Mount(
        path=mount.mount,
        bucket=mount.bucket or "",
        prefix=mount.prefix,
        region=mount.region,
        read_only=mount.read_only,
        allow_delete=mount.allow_delete,
        allow_overwrite=mount.allow_overwrite,
        allow_other=mount.allow_other,
        cache_dir=mount.cache_dir(scratch),
        cache_max_mib=None if mount.cache_max_gib is None else mount.cache_max_gib * 1024,
        metadata_ttl_seconds=mount.metadata_ttl_seconds,
    )


def elastic_pool(plan: ClusterPlan, pool: PoolPlan) -> ElasticPool:
    """What the head's power programs need to launch the elastic nodes of ``pool``: the
    pool's launch template (made by the stack under this name) and its instance tags, which
    are the tags its Auto Scaling group gives the always-on nodes, plus ELASTIC_TAG."""
    name = resource_name(plan.name, POOL_ROLE, pool.name)
    placement = pool.placement_group_name or (name if pool.placement_group else None)
    price = pool.capacity.max_spot_price
    instance_tags = resource_tags(
        plan.spec.tags, plan.name, POOL_ROLE, name, **{POOL_TAG: pool.name, ELASTIC_TAG: pool.name}
    )
    return ElasticPool(
        name=pool.name,
        node_names=pool.elastic_node_names,
        nodes=pool.elastic_nodes,
        launch_template=name,
        instance_type=pool.instance_type,
        capacity=pool.capacity.type.value,
        placement_group=placement,
        max_spot_price=None if price is None else f"{price:g}",
        tags=dict(sorted(instance_tags.items())),
        exclusive=pool.exclusive,
    )


def pool_ref(plan: ClusterPlan, pool: PoolPlan) -> PoolRef:
    return PoolRef(
        name=pool.name,
        node_name_prefix=node_name_prefix(pool.name),
        feature=pool.feature,
        group=resource_name(plan.name, POOL_ROLE, pool.name),
        capacity_type=pool.capacity.type.value,
        reservation_id=pool.capacity.reservation_id or "",
        topology=pool.name in placed_pools(plan),
        **_blocks_of(plan, pool),
    )


def _blocks_of(plan: ClusterPlan, pool: PoolPlan) -> dict[str, Any]:
    blocks = block_pools(plan).get(pool.name)
    if blocks is None:
        return {}
    return {"block_topology": blocks.topology, "blocks": blocks.blocks}


def agent_modules() -> tuple[Path, ...]:
    """The node agent's modules, as the nodes receive them: the package's __init__, the
    contract, and every module of slurmstack/node and its subpackages but the bootstrap,
    which travels in the cloud-init document and installs them."""
    tree = [PACKAGE_DIR / "__init__.py", *(PACKAGE_DIR / "contract").glob("*.py")]
    tree += [p for p in NODE_DIR.rglob("*.py") if p != BOOTSTRAP_SOURCE]
    return tuple(sorted(tree))


def agent_files() -> dict[str, str]:
    """Absolute node path -> text: the agent's launcher and its modules, for every role."""
    cli = f"{AGENT_PACKAGE}.node.cli"
    launcher = render_template("node/slurmstack-node.j2", lib_dir=AGENT_LIB_DIR, module=cli)
    # Slurm's HealthCheckProgram takes no arguments and runs with no PATH.
    health_check = render_template(
        "node/slurmstack-node.j2",
        lib_dir=AGENT_LIB_DIR,
        module=cli,
        command=Command.HEALTH_CHECK.value,
        path=":".join(COMMAND_DIRS),
    )
    files = {AGENT_PATH: launcher, HEALTH_CHECK_PROGRAM: health_check}
    for module in agent_modules():
        files[f"{AGENT_DIR}/{module.relative_to(PACKAGE_DIR).as_posix()}"] = module.read_text()
    return files
