"""Worker pools: the EFA interface layout from the catalog, capacity options, and that the
Pulumi state grows with pools, never with nodes."""

from __future__ import annotations

import pytest

from slurmstack.offline import OfflineRun
from support.stack import (
    T_ASG,
    T_HOOK,
    T_LT,
    T_OBJECT,
    T_PG,
    plan_of,
    run,
    run_ok,
    small_cluster,
)

T_IMAGE = "aws:imagebuilder/image:Image"

pytestmark = pytest.mark.stack


def interfaces(instance_type: str, **pool: object) -> list[dict[str, object]]:
    result = run_ok(small_cluster(instance_type=instance_type, **pool))
    lt = result.one(T_LT, "tiny-pool-gpu")
    assert "vpcSecurityGroupIds" not in lt.inputs  # groups go on the interfaces
    return list(lt.inputs["networkInterfaces"])


@pytest.mark.parametrize(
    ("instance_type", "cards"),
    [("p5.48xlarge", 32), ("p5en.48xlarge", 16), ("p4d.24xlarge", 4)],
)
def test_efa_interface_layout(instance_type: str, cards: int) -> None:
    nics = interfaces(instance_type)
    assert len(nics) == cards
    first, rest = nics[0], nics[1:]
    assert (first["networkCardIndex"], first["deviceIndex"], first["interfaceType"]) == (
        0,
        0,
        "efa",
    )
    assert [n["networkCardIndex"] for n in rest] == list(range(1, cards))
    assert all(n["deviceIndex"] == 1 and n["interfaceType"] == "efa-only" for n in rest)
    for nic in nics:
        assert nic["deleteOnTermination"] == "true"
        assert nic["associatePublicIpAddress"] == "false"
        assert len(nic["securityGroups"]) == 1


def test_no_efa_interfaces_for_a_type_without_efa() -> None:
    nics = interfaces("c7i.16xlarge")
    assert len(nics) == 1
    assert (nics[0]["networkCardIndex"], nics[0]["deviceIndex"]) == (0, 0)
    assert "interfaceType" not in nics[0]


def test_no_efa_interfaces_when_the_pool_turns_efa_off() -> None:
    nics = interfaces("g6e.12xlarge", efa=False)
    assert len(nics) == 1 and "interfaceType" not in nics[0]


def test_placement_group_only_where_planned() -> None:
    on_demand = run_ok(small_cluster())
    assert on_demand.one(T_PG, "tiny-pool-gpu").inputs["strategy"] == "cluster"
    block = run_ok(
        small_cluster(capacity={"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"})
    )
    assert not block.of_type(T_PG)
    lt = block.one(T_LT, "tiny-pool-gpu").inputs
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert "placement" not in lt
    no_efa = run_ok(small_cluster(instance_type="c7i.16xlarge"))
    assert not no_efa.of_type(T_PG)


ODCR = {"type": "capacity_reservation", "reservation_id": "cr-0123456789abcdef0"}


def test_capacity_reservation_pools_get_no_new_placement_group() -> None:
    """An On-Demand Capacity Reservation cannot move into a placement group made after it:
    auto makes none, and a named group (the one the reservation was made in) is launched
    into without being created (or ever deleted) by the stack."""
    auto = run_ok(small_cluster(capacity=ODCR))
    assert not auto.of_type(T_PG)
    lt = auto.one(T_LT, "tiny-pool-gpu").inputs
    assert "placement" not in lt
    target = lt["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target["capacityReservationId"] == ODCR["reservation_id"]
    named = run_ok(small_cluster(capacity=ODCR, placement_group="odcr-p5-pg"))
    assert not named.of_type(T_PG)
    assert named.one(T_LT, "tiny-pool-gpu").inputs["placement"] == {"groupName": "odcr-p5-pg"}
    # A named group works for on-demand pools too, and replaces the pool's own group.
    shared = run_ok(small_cluster(placement_group="shared-pg"))
    assert not shared.of_type(T_PG)
    assert shared.one(T_LT, "tiny-pool-gpu").inputs["placement"] == {"groupName": "shared-pg"}


def test_true_with_a_capacity_reservation_is_refused_with_the_reason() -> None:
    result = run(small_cluster(capacity=ODCR, placement_group=True))
    assert result.error is not None and result.resources == []
    (line,) = [x for x in result.error_lines() if x.startswith("pools[0].placement_group:")]
    assert "cannot move into a group made after it" in line
    assert "placement_group: <name>" in line


def test_spot_pool() -> None:
    result = run_ok(small_cluster(capacity={"type": "spot", "max_spot_price": 40.5}))
    lt = result.one(T_LT, "tiny-pool-gpu").inputs
    assert "instanceMarketOptions" not in lt  # the group and the fleet each ask for Spot
    spot = result.one(T_ASG).inputs["mixedInstancesPolicy"]["instancesDistribution"]
    assert spot["onDemandPercentageAboveBaseCapacity"] == 0
    assert spot["spotMaxPrice"] == "40.5"
    assert result.one(T_ASG).inputs["capacityRebalance"] is True


def test_image_is_the_baked_ami_or_the_pools_own() -> None:
    """Never resolved at launch: every node of a template version boots the same AMI."""
    result = run_ok(small_cluster())
    lt = result.one(T_LT).inputs
    (image,) = [i for i in result.of_type(T_IMAGE) if i.name == "tiny-image-nvidia-x86-64"]
    assert lt["imageId"] == image.outputs["outputResources"][0]["amis"][0]["image"]
    assert not lt["imageId"].startswith("resolve:")
    pinned = run_ok(small_cluster(ami="ami-0123456789abcdef0"))
    assert pinned.one(T_LT).inputs["imageId"] == "ami-0123456789abcdef0"
    # The pool brings its own image: only the head's (CPU) image is baked.
    assert [i.name for i in pinned.of_type(T_IMAGE)] == ["tiny-image-cpu-x86-64"]


def test_a_new_template_version_rolls_out_in_batches() -> None:
    definition = small_cluster()
    definition["image"] = {
        "rollout": {"min_healthy_percentage": 75, "instance_warmup_seconds": 600}
    }
    refresh = run_ok(definition).one(T_ASG).inputs["instanceRefresh"]
    assert refresh["strategy"] == "Rolling"
    assert refresh["preferences"] == {
        "minHealthyPercentage": 75,
        "maxHealthyPercentage": 100,
        "instanceWarmup": "600",
        "skipMatching": True,
        # It stops and restores the previous version by itself when new nodes fail, and
        # pauses a warm-up long at a quarter and a half of the pool.
        "autoRollback": True,
        "checkpointPercentages": [25, 50, 100],
        "checkpointDelay": "600",
    }
    # Auto rollback needs the template version named explicitly (not $Latest/$Default).
    group = run_ok(definition).one(T_ASG).inputs
    version = str(group["launchTemplate"]["version"])
    assert version.isdigit(), version
    default = run_ok(small_cluster()).one(T_ASG).inputs["instanceRefresh"]["preferences"]
    assert default["minHealthyPercentage"] == 90


def test_a_worker_that_powers_itself_off_is_terminated() -> None:
    """A failed boot that cannot reach its group (an elastic node never can) powers off: the
    instance must end there, not stop and wait for Slurm's ResumeTimeout."""
    definition = small_cluster()
    definition["pools"][0]["max_count"] = definition["pools"][0]["count"] + 2
    result = run_ok(definition)
    for template in result.of_type(T_LT):
        assert template.inputs["instanceInitiatedShutdownBehavior"] == "terminate"


def test_every_group_holds_terminating_instances_for_the_drain() -> None:
    """Each group's drain hook is a LifecycleHook resource of its own, with the heartbeat
    timeout the controller's passes keep alive and CONTINUE if they stop; the group itself
    carries none (initial_lifecycle_hooks is force-new: a change there would replace the
    group, and with it every node of the pool)."""
    from slurmstack.contract import DRAIN_HOOK_HEARTBEAT_SECONDS, DRAIN_HOOK_NAME

    definition = small_cluster()
    definition["pools"].append({"name": "cpu", "instance_type": "c7i.2xlarge", "count": 1})
    result = run_ok(definition)
    groups = result.of_type(T_ASG)
    hooks = [h for h in result.of_type(T_HOOK) if h.inputs["name"] == DRAIN_HOOK_NAME]
    assert len(groups) == 2
    assert sorted(h.inputs["autoscalingGroupName"] for h in hooks) == sorted(
        g.outputs["name"] for g in groups
    )
    for group in groups:
        assert "initialLifecycleHooks" not in group.inputs
        # Groups made before the hook was its own resource carry it inline: never replaced for it.
        assert "initialLifecycleHooks" in group.options.ignore_changes
    for hook in hooks:
        assert {k: v for k, v in hook.inputs.items() if k != "autoscalingGroupName"} == {
            "name": DRAIN_HOOK_NAME,
            "lifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING",
            "heartbeatTimeout": DRAIN_HOOK_HEARTBEAT_SECONDS,
            "defaultResult": "CONTINUE",
        }


def test_every_group_holds_launching_instances_until_their_node_joins() -> None:
    """The join hook: a resource of its own on each pool's group (updated in place; a group's
    initial hooks are force-new), on launches, abandoning an instance whose boot never ends
    within the heartbeat timeout (AWS's default hour, above the first boot's DCGM diagnostic
    and slurmd's start timeout). Its name is the one the node's `joined` step and the
    bootstrap's ABANDON complete."""
    from slurmstack.contract import (
        DEEP_DIAGNOSTIC_SECONDS,
        JOIN_HOOK_HEARTBEAT_SECONDS,
        JOIN_HOOK_NAME,
    )

    definition = small_cluster()
    definition["pools"].append({"name": "cpu", "instance_type": "c7i.2xlarge", "count": 1})
    result = run_ok(definition)
    groups = {g.name: g for g in result.of_type(T_ASG)}
    hooks = [h for h in result.of_type(T_HOOK) if h.inputs["name"] == JOIN_HOOK_NAME]
    assert sorted(h.name for h in hooks) == ["tiny-pool-cpu-join", "tiny-pool-gpu-join"]
    for hook in hooks:
        assert hook.inputs["autoscalingGroupName"] in {g.inputs["name"] for g in groups.values()}
        assert hook.inputs["lifecycleTransition"] == "autoscaling:EC2_INSTANCE_LAUNCHING"
        assert hook.inputs["defaultResult"] == "ABANDON"
        assert hook.inputs["heartbeatTimeout"] == JOIN_HOOK_HEARTBEAT_SECONDS
        assert DEEP_DIAGNOSTIC_SECONDS + 600 < JOIN_HOOK_HEARTBEAT_SECONDS <= 7200  # AWS's max
        assert hook.parent and hook.parent.endswith("WorkerPool::" + hook.name[: -len("-join")])
    # A pool's node completes it as its last boot step, after slurmd has started.
    from slurmstack.contract import Command
    from slurmstack.render import user_data

    document = user_data(plan_of(definition), "gpu")
    assert document.index("slurmd.service") < document.index(f"{Command.JOINED}]")
    assert document.index(f"{Command.JOINED}]") < document.index(", done]")


def test_8_and_10240_gpus_register_the_same_resources() -> None:
    small = run_ok(small_cluster(count=1))  # 1 x p5 = 8 H100
    large = run_ok(small_cluster(count=1280))  # 1,280 x p5 = 10,240 H100
    assert len(small.resources) == len(large.resources)
    assert small.count_by_type() == large.count_by_type()

    # The same resources, except that content-addressed config objects are named by the
    # content (slurm.conf's MaxNodeCount follows the node count).
    def urns(result: OfflineRun) -> set[str]:
        return {r.urn for r in result.resources if r.type != T_OBJECT}

    assert urns(small) == urns(large)
    assert large.one(T_ASG).inputs["desiredCapacity"] == 1280
    assert large.outputs["pools"]["gpu"]["count"] == 1280


def test_resources_grow_with_pools() -> None:
    one = run_ok(small_cluster())
    definition = small_cluster()
    definition["pools"].append(
        {"name": "cpu", "instance_type": "c7i.16xlarge", "count": 3, "capacity": {"type": "spot"}}
    )
    two = run_ok(definition)
    added = two.count_by_type() - one.count_by_type()
    # One launch template, one group and its drain and join hooks for the new pool (no
    # placement group: no EFA), its instance role (policy, profile), plus the config store
    # objects new with its files.
    assert added[T_LT] == 1 and added[T_ASG] == 1 and added[T_HOOK] == 2 and added[T_PG] == 0
    iam = {"aws:iam/role:Role", "aws:iam/rolePolicy:RolePolicy"}
    iam.add("aws:iam/instanceProfile:InstanceProfile")
    assert all(added[t] == 1 for t in iam)
    assert set(added) <= {T_LT, T_ASG, T_HOOK, "aws:s3/bucketObjectv2:BucketObjectv2", *iam}
