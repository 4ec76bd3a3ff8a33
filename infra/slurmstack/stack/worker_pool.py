"""One worker pool: a launch template, at most one cluster placement group, one Auto
Scaling group at the pool's count. Pulumi state grows with pools, never with nodes."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_aws.autoscaling as autoscaling
import pulumi_aws.ec2 as ec2

from slurmstack.contract import (
    DRAIN_HOOK_HEARTBEAT_SECONDS,
    DRAIN_HOOK_NAME,
    JOIN_HOOK_HEARTBEAT_SECONDS,
    JOIN_HOOK_NAME,
    POOL_TAG,
    resource_name,
)
from slurmstack.plan import ClusterPlan, InterfaceType, PoolPlan
from slurmstack.spec import CapacityType
from slurmstack.stack.common import ROOT_DEVICE, SLURM_VERSION_TAG, Role, tags
from slurmstack.stack.user_data import encoded_user_data

# GPU nodes take minutes to boot (driver, EFA, RAID0 over NVMe, mounts) before their own
# health check runs; the group must not replace them for failing EC2 checks meanwhile.
HEALTH_CHECK_GRACE_SECONDS = 900


def pool_slurm_version(plan: ClusterPlan, pool: PoolPlan) -> str:
    spec = next(p for p in plan.spec.pools if p.name == pool.name)
    return spec.slurm_version or plan.spec.slurm.version


# A refresh pauses at these shares of the pool replaced (the last must be 100: EC2 Auto Scaling
# API Reference, RefreshPreferences, CheckpointPercentages), each pause one warm-up long, so a
# new image that fails on a quarter of the pool is seen before it reaches the rest.
REFRESH_CHECKPOINTS = (25, 50, 100)


def instance_refresh(plan: ClusterPlan) -> autoscaling.GroupInstanceRefreshArgs:
    """How a new launch template version (a new image, new user data) reaches running nodes:
    the group's instance refresh replaces them in batches, keeping min_healthy_percentage of
    the pool in service, each new node given instance_warmup_seconds after it has joined Slurm
    (the launch hook, join_hook, holds it out of service until then) before the next batch,
    pausing at each checkpoint. Nodes already on the new version are skipped.

    It rolls back by itself when it fails (auto_rollback: EC2 Auto Scaling User Guide, "Undo
    changes with a rollback"): new nodes that fail their boot check mark themselves Unhealthy
    (slurmstack.node.bootstrap), the group replaces them, and a refresh whose replacements keep
    failing stops and restores the previous launch template version, which the group names
    explicitly (auto rollback needs an explicit version, not $Latest or $Default).

    Each replaced node leaves through the group's termination path, so the pool's
    termination lifecycle hook (drain_hook) drains it in Slurm first."""
    rollout = plan.spec.image.rollout
    return autoscaling.GroupInstanceRefreshArgs(
        strategy="Rolling",
        preferences=autoscaling.GroupInstanceRefreshPreferencesArgs(
            min_healthy_percentage=rollout.min_healthy_percentage,
            # Never above the pool's size: capacity blocks and reservations have no spare.
            max_healthy_percentage=100,
            instance_warmup=str(rollout.instance_warmup_seconds),
            skip_matching=True,
            auto_rollback=True,
            checkpoint_percentages=list(REFRESH_CHECKPOINTS),
            checkpoint_delay=str(rollout.instance_warmup_seconds),
        ),
    )


# The group's input that groups made by earlier slurmstack versions carried the drain hook in.
# The provider replaces a group whose initial_lifecycle_hook changes (ForceNew, see
# slurmstack/change/replacement.json), and a group with a fixed name is deleted before its
# replacement exists: every node of the pool terminated. The group ignores it, so such a
# group keeps its hook in AWS and is never replaced for it; the DrainHook resource below takes
# that hook over (AWS's PutLifecycleHook creates or updates a hook by its name).
LEGACY_HOOK_PROPERTY = "initialLifecycleHooks"


def drain_hook(
    name: str, group: autoscaling.Group, parent: pulumi.Resource
) -> autoscaling.LifecycleHook:
    """No busy node is terminated: a terminating instance waits in this hook while the head
    node's controller drains its node, sees its jobs end (up to health.scale_in_wait_minutes,
    with a heartbeat every pass) and its logs reach the bucket, then completes the action. If
    the controller is gone the action completes by itself (CONTINUE) once a heartbeat is
    missed, so nothing waits for ever; AWS caps a wait at 48 hours or 100 heartbeat timeouts,
    whichever is smaller (Amazon EC2 Auto Scaling User Guide, lifecycle hooks).

    A resource of its own, so a change of its settings is an update in place. Instance
    refreshes, scale-in and the health check's replacements all terminate through it; it
    only acts on terminations, so the seconds between the group's creation and the hook's
    (before any node has joined Slurm) lose nothing."""
    return autoscaling.LifecycleHook(
        f"{name}-drain",
        autoscaling_group_name=group.name,
        name=DRAIN_HOOK_NAME,
        lifecycle_transition="autoscaling:EC2_INSTANCE_TERMINATING",
        heartbeat_timeout=DRAIN_HOOK_HEARTBEAT_SECONDS,
        default_result="CONTINUE",
        opts=pulumi.ResourceOptions(parent=parent),
    )


def join_hook(
    name: str, group: autoscaling.Group, parent: pulumi.Resource
) -> autoscaling.LifecycleHook:
    """A launching instance waits (Pending:Wait) until its node has joined Slurm: its last boot
    step completes the action (slurmstack.node.boot.join_hook), and only then is it InService. An
    instance refresh counts warm-up from InService (RefreshPreferences, InstanceWarmup), so its
    batches and its rollback judge nodes that run jobs, not instances that merely booted. A
    failed boot abandons the action (the group terminates the instance and launches another);
    a boot that never ends is abandoned when the heartbeat timeout runs out (ABANDON on a launch
    terminates the instance: EC2 Auto Scaling User Guide, "Complete a lifecycle action").

    A resource of its own, updated in place: a group's initial_lifecycle_hooks cannot change
    without replacing the group. It acts on launches after it exists; the group's first
    instances, launched while it is being made, go InService at once and join by themselves."""
    return autoscaling.LifecycleHook(
        f"{name}-join",
        autoscaling_group_name=group.name,
        name=JOIN_HOOK_NAME,
        lifecycle_transition="autoscaling:EC2_INSTANCE_LAUNCHING",
        heartbeat_timeout=JOIN_HOOK_HEARTBEAT_SECONDS,
        default_result="ABANDON",
        opts=pulumi.ResourceOptions(parent=parent),
    )


def network_interfaces(
    pool: PoolPlan, security_group_id: pulumi.Input[str], client_groups: Sequence[str] = ()
) -> list[ec2.LaunchTemplateNetworkInterfaceArgs]:
    """The launch template's interfaces, one per entry of the plan's layout.

    Card 0 / device 0 is the primary interface (``efa`` on EFA pools, carrying the node's
    IP); every other card gets one ``efa-only`` interface at device index 1 (no IP address of
    its own, so a p5 takes one subnet address, not 32).
    """
    return [
        ec2.LaunchTemplateNetworkInterfaceArgs(
            device_index=nic.device_index,
            network_card_index=nic.network_card_index,
            interface_type=(
                None if nic.interface_type is InterfaceType.INTERFACE else nic.interface_type.value
            ),
            # Your file systems' client groups too (storage.existing): they admit those.
            security_groups=[security_group_id, *client_groups],
            # The provider types these two as strings.
            delete_on_termination="true",
            associate_public_ip_address="false",
        )
        for nic in pool.interfaces
    ]


def market_options(pool: PoolPlan) -> ec2.LaunchTemplateInstanceMarketOptionsArgs | None:
    """A Capacity Block pool's template says capacity-block, as both its group and an EC2
    Fleet (the elastic nodes' launch, slurmstack.node.power.launch) require. A spot pool's
    says nothing: each caller asks for Spot itself, the group through its mixed instances
    policy (spot_distribution) and the fleet through its target capacity type, so no market
    options in the template can contradict either."""
    if pool.capacity.type is CapacityType.CAPACITY_BLOCK:
        return ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
    return None


# Spot capacity from the pools with the most capacity at the lowest price (EC2 Auto Scaling
# User Guide, "Allocation strategies": AWS's recommendation for most Spot workloads); the
# elastic nodes' fleet asks the same (slurmstack.node.power.launch.SPOT_ALLOCATION).
SPOT_ALLOCATION = "price-capacity-optimized"


def spot_distribution(
    pool: PoolPlan,
) -> autoscaling.GroupMixedInstancesPolicyInstancesDistributionArgs:
    """A spot pool's group: every instance Spot, at most max_spot_price."""
    price = pool.capacity.max_spot_price
    return autoscaling.GroupMixedInstancesPolicyInstancesDistributionArgs(
        on_demand_base_capacity=0,
        on_demand_percentage_above_base_capacity=0,
        spot_allocation_strategy=SPOT_ALLOCATION,
        spot_max_price=f"{price:g}" if price is not None else None,
    )


def reservation_options(
    pool: PoolPlan,
) -> ec2.LaunchTemplateCapacityReservationSpecificationArgs | None:
    capacity = pool.capacity
    if capacity.type in (CapacityType.CAPACITY_BLOCK, CapacityType.CAPACITY_RESERVATION):
        target = ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
            capacity_reservation_id=capacity.reservation_id
        )
        return ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=target
        )
    return None


def root_volume(pool: PoolPlan) -> ec2.LaunchTemplateBlockDeviceMappingArgs:
    volume = pool.root_volume
    return ec2.LaunchTemplateBlockDeviceMappingArgs(
        device_name=ROOT_DEVICE,
        ebs=ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
            volume_type="gp3",
            volume_size=volume.size_gib,
            iops=volume.iops,
            throughput=volume.throughput_mibps,
            encrypted="true",
            delete_on_termination="true",
        ),
    )


def spot_policy(
    pool: PoolPlan, template_id: pulumi.Input[str], version: pulumi.Input[str]
) -> autoscaling.GroupMixedInstancesPolicyArgs:
    spec = autoscaling.GroupMixedInstancesPolicyLaunchTemplateLaunchTemplateSpecificationArgs(
        launch_template_id=template_id, version=version
    )
    return autoscaling.GroupMixedInstancesPolicyArgs(
        launch_template=autoscaling.GroupMixedInstancesPolicyLaunchTemplateArgs(
            launch_template_specification=spec
        ),
        instances_distribution=spot_distribution(pool),
    )


class WorkerPool(pulumi.ComponentResource):
    launch_template: ec2.LaunchTemplate
    placement_group: ec2.PlacementGroup | None
    group: autoscaling.Group
    drain_hook: autoscaling.LifecycleHook
    join_hook: autoscaling.LifecycleHook

    def __init__(
        self,
        plan: ClusterPlan,
        pool: PoolPlan,
        *,
        subnet_id: pulumi.Input[str],
        security_group_id: pulumi.Input[str],
        instance_profile_arn: pulumi.Input[str],
        image_id: pulumi.Input[str],
        network_ready: Sequence[pulumi.Resource] = (),
        security_ready: Sequence[pulumi.Resource] = (),
        controller: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``network_ready``: routes and endpoints the nodes need at boot; ``security_ready``:
        the workers' group rules (EFA needs all traffic within the group, both ways, from the
        first job), both waited for before the group launches anything. ``controller``: the
        head's instance, which the launch template waits for (a Slurm upgrade replaces the
        head before any pool's instance refresh starts: slurmstack.stack.head_node.head_ami)."""
        name = resource_name(plan.name, Role.POOL, pool.name)
        super().__init__("slurmstack:stack:WorkerPool", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        pool_tags = tags(
            plan,
            Role.POOL,
            name,
            **{POOL_TAG: pool.name, SLURM_VERSION_TAG: pool_slurm_version(plan, pool)},
        )

        self.placement_group = None
        placement = None
        if pool.placement_group_name is not None:
            # An existing group the definition names (e.g. the one a capacity reservation was
            # made in): launched into, never created or deleted here.
            placement = ec2.LaunchTemplatePlacementArgs(group_name=pool.placement_group_name)
        elif pool.placement_group:
            self.placement_group = ec2.PlacementGroup(
                name, name=name, strategy="cluster", tags=pool_tags, opts=child
            )
            placement = ec2.LaunchTemplatePlacementArgs(group_name=self.placement_group.name)

        self.launch_template = ec2.LaunchTemplate(
            name,
            name=name,
            description=f"slurmstack {plan.name}: pool {pool.name} ({pool.instance_type})",
            # The pool's baked image (or its own): never resolved at launch, so every node of
            # a template version boots the same image (slurmstack.stack.image).
            image_id=image_id,
            instance_type=pool.instance_type,
            iam_instance_profile=ec2.LaunchTemplateIamInstanceProfileArgs(arn=instance_profile_arn),
            network_interfaces=network_interfaces(
                pool, security_group_id, plan.existing_client_groups
            ),
            metadata_options=ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                # 1: no container may reach the metadata service. Enroot/pyxis containers use
                # the host's network namespace (no extra hop, and the node's nftables rules
                # refuse every user but root); a bridged container is one hop further, so its
                # IMDSv2 token reply dies on the way: a second control behind the rules' forward
                # drop (slurmstack.imds_firewall).
                http_put_response_hop_limit=1,
                # An elastic node reads its launch's tags here, with no API call, at boot
                # (slurmstack.node.boot.elastic); checks.elastic.elastic_tag_keys keeps every
                # tag key one the metadata can hold.
                instance_metadata_tags="enabled" if pool.elastic_nodes else None,
            ),
            block_device_mappings=[root_volume(pool)],
            # A worker that cannot mark itself Unhealthy after a failed boot powers off
            # (slurmstack.node.bootstrap): that is always the case for an elastic node, which
            # is in no group. Terminating on power-off stops the bill at once instead of
            # leaving a stopped instance until ResumeTimeout; a group replaces its own.
            instance_initiated_shutdown_behavior="terminate",
            instance_market_options=market_options(pool),
            capacity_reservation_specification=reservation_options(pool),
            placement=placement,
            user_data=encoded_user_data(plan, pool.name),
            # The group tags instances; volumes and interfaces are tagged here.
            tag_specifications=[
                {"resource_type": kind, "tags": pool_tags}
                for kind in ("volume", "network-interface")
            ],
            update_default_version=True,
            tags=pool_tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(controller)),
        )

        # The template's own latest version: a template change shows as a group change in
        # the preview, and new instances use it (running ones are kept).
        version = self.launch_template.latest_version.apply(str)
        spot = pool.capacity.type is CapacityType.SPOT
        self.group = autoscaling.Group(
            name,
            name=name,
            # The always-on nodes; the elastic ones (max_count - count) are Slurm's to start
            # and stop (slurmstack.node.power), outside the group.
            min_size=pool.count,
            max_size=pool.count,
            desired_capacity=pool.count,
            vpc_zone_identifiers=[subnet_id],
            launch_template=None if spot else {"id": self.launch_template.id, "version": version},
            # Spot: the group asks for it itself (see market_options).
            mixed_instances_policy=spot_policy(pool, self.launch_template.id, version)
            if spot
            else None,
            health_check_type="EC2",
            health_check_grace_period=HEALTH_CHECK_GRACE_SECONDS,
            # "0": do not wait for instances. A 1,280-node pool, a capacity block that starts
            # tomorrow or a spot shortage would otherwise hold `pulumi up` for the default
            # 10 minutes and then fail the update; nodes join Slurm by themselves.
            wait_for_capacity_timeout="0",
            # Spot: launch a replacement when EC2 signals an elevated interruption risk.
            capacity_rebalance=pool.capacity.type is CapacityType.SPOT,
            # A new template version (a new image) rolls out in batches (see instance_refresh).
            instance_refresh=instance_refresh(plan),
            tags=[
                {"key": key, "value": value, "propagate_at_launch": True}
                for key, value in sorted(pool_tags.items())
            ],
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*network_ready, *security_ready],
                ignore_changes=[LEGACY_HOOK_PROPERTY],
            ),
        )
        self.drain_hook = drain_hook(name, self.group, self)
        self.join_hook = join_hook(name, self.group, self)
        self.register_outputs({"asg_name": self.group.name, "count": pool.count})
