"""Build the time-to-ready schedule from what the offline engine recorded."""

from __future__ import annotations

from slurmstack.contract import DeployParameter
from slurmstack.offline.record import OfflineRun, RecordedResource
from slurmstack.report.timing import (
    HEAD_BOOT,
    JOIN,
    NODE_BOOT,
    READY,
    Duration,
    Step,
    Timeline,
    TimelineRange,
    creation_time,
    schedule,
    schedule_range,
)

INSTANCE = "aws:ec2/instance:Instance"
ASG = "aws:autoscaling/group:Group"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PARAMETER = "aws:ssm/parameter:Parameter"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
MOUNT_TARGET = "aws:efs/mountTarget:MountTarget"
STATE_ATTACHMENT = "aws:ec2/volumeAttachment:VolumeAttachment"
IMAGE = "aws:imagebuilder/image:Image"
# An image the stack already holds (a later `pulumi up`): nothing to build.
IMAGE_KEPT = Duration(0, "image already built and kept in the stack: reused, not built again")
HEAD_BOOT_KEY, HEAD_READY, CLUSTER_READY = "boot:head", "join:head", "ready"
# Parameters naming a shared file system: workers mount it before slurmd starts; the head
# starts slurmctld first and mounts it afterwards.
STORAGE_PARAMETERS = tuple(
    f"/{key.value}"
    for key in (
        DeployParameter.LUSTRE_DNS,
        DeployParameter.LUSTRE_MOUNT_NAME,
        DeployParameter.EFS_ID,
    )
)


def _label(resource: RecordedResource) -> str:
    short = resource.type.rsplit(":", 1)[-1]
    return f"{short} {resource.name}"


def resource_steps(
    run: OfflineRun, *, embed_addresses: bool = False, images_built: bool = False
) -> list[Step]:
    """One step per cloud resource, after the resources it depends on.

    ``embed_addresses`` models the alternative design in which the head node's and the
    pools' user data embed the file systems' addresses (so Pulumi must create the file
    systems first); slurmstack passes them through SSM parameters instead. ``images_built``:
    the node images exist already (every `pulumi up` after the first), so they take no time.
    """
    stores = [r.urn for r in run.custom if r.type in (LUSTRE, MOUNT_TARGET)]
    steps: list[Step] = []
    for resource in run.custom:
        after = set(resource.options.dependencies)
        if embed_addresses and resource.type in (INSTANCE, LAUNCH_TEMPLATE):
            after.update(stores)
        duration = creation_time(resource.type)
        if images_built and resource.type == IMAGE:
            duration = IMAGE_KEPT
        steps.append(Step(resource.urn, _label(resource), duration, frozenset(after)))
    return steps


def _desired_nodes(group: RecordedResource) -> int:
    desired = group.inputs.get("desiredCapacity", group.inputs.get("minSize"))
    return int(desired) if isinstance(desired, (int, float)) else 1


def boot_steps(run: OfflineRun) -> list[Step]:
    """The head node's and each pool's boot, in two steps each.

    First the machine boots on its own (image check, NVMe RAID0, health check). Then it
    reads every deploy-time parameter it needs (waiting until each exists) and starts its
    Slurm daemon: a worker mounts the shared file systems first, so its step waits for the
    parameters, the file systems and mount targets, and for slurmctld; the head starts
    slurmctld without waiting for the file systems (it mounts them afterwards).
    """
    custom = run.custom
    waits = frozenset(r.urn for r in custom if r.type in (PARAMETER, LUSTRE, MOUNT_TARGET))
    head_waits = frozenset(
        r.urn
        for r in custom
        if r.type == PARAMETER and not str(r.inputs.get("name", "")).endswith(STORAGE_PARAMETERS)
    )
    heads = frozenset(r.urn for r in custom if r.type in (INSTANCE, STATE_ATTACHMENT))
    steps = [
        Step(HEAD_BOOT_KEY, "head node boots (cloud-init, image check)", HEAD_BOOT, heads),
        Step(
            HEAD_READY,
            "head node starts slurmctld (mounts shared storage after)",
            JOIN,
            head_waits | {HEAD_BOOT_KEY},
        ),
    ]
    joined = []
    # A group of no nodes (a pool that is all elastic, or count 0) boots nothing: the cluster
    # is ready without it, and its nodes boot when a job asks for them.
    for group in (r for r in custom if r.type == ASG and _desired_nodes(r) > 0):
        boot, join = f"boot:{group.name}", f"join:{group.name}"
        joined.append(join)
        steps.append(
            Step(boot, f"{group.name}: nodes launch and boot", NODE_BOOT, frozenset({group.urn}))
        )
        steps.append(
            Step(
                join,
                f"{group.name}: nodes mount storage, slurmd joins",
                JOIN,
                waits | {boot, HEAD_READY},
            )
        )
    steps.append(Step(CLUSTER_READY, "cluster ready", READY, frozenset({HEAD_READY, *joined})))
    return steps


def time_to_ready(
    run: OfflineRun, *, embed_addresses: bool = False, images_built: bool = False
) -> Timeline:
    return time_to_ready_range(
        run, embed_addresses=embed_addresses, images_built=images_built
    ).typical


def time_to_ready_range(
    run: OfflineRun, *, embed_addresses: bool = False, images_built: bool = False
) -> TimelineRange:
    """The typical schedule, and the totals with every step at its low and high figure."""
    steps = resource_steps(run, embed_addresses=embed_addresses, images_built=images_built)
    steps += boot_steps(run)
    return schedule_range(steps, target=CLUSTER_READY)


def time_to_stack(run: OfflineRun, *, embed_addresses: bool = False) -> Timeline:
    """Until `pulumi up` returns (every resource created; no boot)."""
    return schedule(resource_steps(run, embed_addresses=embed_addresses))
