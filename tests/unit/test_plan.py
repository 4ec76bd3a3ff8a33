"""The plan's Slurm, EFA and mount derivations."""

from __future__ import annotations

import pytest

from slurmstack.contract import MountKind
from slurmstack.plan import MAX_NODE_COUNT_STEP, ClusterPlan, PlanError, build_plan
from slurmstack.rules.fsx import is_efa_lustre_client, lustre_efa_interface_count
from slurmstack.spec import ClusterSpec
from support.examples import EXAMPLE_IDS, example_plan


def test_p5_pool() -> None:
    plan = example_plan("p5-training")
    train = plan.pool("train")
    assert train.gpu is not None and train.gpu.gres == "gpu:h100:8"
    assert train.dynamic_node_conf == (
        "Feature=train Gres=gpu:h100:8 RealMemory=1992295 CPUs=192 Sockets=2 "
        "CoresPerSocket=48 ThreadsPerCore=2"
    )
    assert train.node_name_pattern == "train-[0-65535]"
    assert train.exclusive
    assert train.expected_gpus == 8 and train.expected_efa_devices == 32
    assert train.real_memory_mib < train.facts.memory_mib - 2048
    assert [m.kind for m in train.mounts] == [MountKind.EFS, MountKind.LUSTRE, MountKind.NVME_RAID0]
    assert train.container_root == "/scratch/enroot"
    dev = plan.pool("dev")
    assert dev.gpu is not None and dev.gpu.gres == "gpu:l40s:4"
    assert not dev.exclusive  # EFA without RDMA: inference/dev, shareable
    assert plan.default_partition == "train"


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_max_node_count_has_headroom(example: str) -> None:
    plan = example_plan(example)
    assert plan.slurm_max_node_count >= 2 * plan.max_node_count
    assert plan.slurm_max_node_count % MAX_NODE_COUNT_STEP == 0


def test_gres_models_are_lowercase() -> None:
    seen = {p.gpu.gres for e in EXAMPLE_IDS for p in example_plan(e).pools if p.gpu}
    assert {
        "gpu:h100:8",
        "gpu:a100:8",
        "gpu:l40s:4",
        "gpu:l4:4",
        "neuron:trainium2:16",
        "neuron:trainium:16",
    } <= seen
    assert example_plan("trainium").gres_types == ("gpu", "neuron")


def test_cpu_pools_have_no_gres_and_no_gpu_health() -> None:
    plan = example_plan("cpu-hpc")
    for pool in plan.pools:
        assert pool.gpu is None and pool.expected_gpus == 0
        assert "Gres=" not in pool.dynamic_node_conf
    assert plan.pool("mpi").expected_efa_devices == 2
    assert plan.pool("batch").expected_efa_devices == 0


def test_pool_named_head_is_refused() -> None:
    data = {
        "name": "x",
        "region": "us-east-1",
        "availability_zone": "us-east-1a",
        "head_node": {"instance_type": "m7i.xlarge"},
        "pools": [{"name": "head", "instance_type": "c7i.large", "count": 1}],
    }
    with pytest.raises(PlanError, match="reserved"):
        build_plan(ClusterSpec.model_validate(data))


def test_settings_keep_their_order_and_yes_no() -> None:
    data = {
        "name": "x",
        "region": "us-east-1",
        "availability_zone": "us-east-1a",
        "head_node": {"instance_type": "m7i.xlarge"},
        "pools": [{"name": "a", "instance_type": "c7i.large", "count": 1}],
        "slurm": {"settings": {"MaxJobCount": 5, "EnforcePartLimits": True}},
    }
    plan = build_plan(ClusterSpec.model_validate(data))
    assert plan.slurm_settings == (("MaxJobCount", "5"), ("EnforcePartLimits", "YES"))


# --- Lustre over EFA (FSx for Lustre User Guide, "Working with EFA-enabled file systems") ---


def with_lustre(example: str, **lustre: object) -> ClusterPlan:
    """The example's plan with its Lustre settings changed."""
    spec = example_plan(example).spec.model_dump(mode="json")
    spec["storage"]["lustre"].update(lustre)
    return build_plan(ClusterSpec.model_validate(spec))


def over_efa(plan: ClusterPlan) -> dict[str, tuple[bool, int]]:
    return {p.name: (p.lustre_over_efa, p.lustre_efa_interfaces) for p in plan.pools}


def test_p5_example_reads_lustre_over_efa() -> None:
    plan = example_plan("p5-training")
    assert plan.lustre is not None and plan.lustre.efa
    # train: p5.48xlarge, 8 of its 32 EFA devices (AWS's default for p5). dev: g6e.12xlarge
    # is Nitro v4 with EFA on, so it is an EFA client too, with its one EFA device.
    assert over_efa(plan) == {"train": (True, 8), "dev": (True, 1)}
    assert plan.lustre_efa_connections == 16 * 8 + 2 * 1
    assert not plan.lustre_efa_connections_exceed_limit


def test_a_pool_without_efa_mounts_over_tcp() -> None:
    spec = example_plan("p5-training").spec.model_dump(mode="json")
    spec["pools"][1]["efa"] = False
    plan = build_plan(ClusterSpec.model_validate(spec))
    assert over_efa(plan) == {"train": (True, 8), "dev": (False, 0)}


def test_p4d_mounts_over_tcp() -> None:
    # As written the file system is not EFA-enabled (4800 GiB is not whole EFA servers at
    # 500 MB/s/TiB); on an EFA-enabled one p4d (Nitro v3) still mounts over TCP.
    assert over_efa(example_plan("p4d-odcr")) == {"a100": (False, 0)}
    efa_fs = with_lustre("p4d-odcr", capacity_gib=9600)
    assert efa_fs.lustre is not None and efa_fs.lustre.efa
    assert efa_fs.pool("a100").efa
    assert over_efa(efa_fs) == {"a100": (False, 0)}


def test_trainium_mounts_over_tcp() -> None:
    assert over_efa(example_plan("trainium")) == {"trn2": (False, 0), "trn1": (False, 0)}
    # On an EFA-enabled file system trn2 stays on TCP (AWS excludes the family); trn1 is
    # Nitro v4 and takes the default of two interfaces for a multi-card instance.
    efa_fs = with_lustre("trainium", capacity_gib=38400)
    assert efa_fs.lustre is not None and efa_fs.lustre.efa
    assert over_efa(efa_fs) == {"trn2": (False, 0), "trn1": (True, 2)}


def test_no_efa_lustre_without_an_efa_enabled_file_system() -> None:
    tcp_fs = with_lustre("p5-training", efa=False)
    assert over_efa(tcp_fs) == {"train": (False, 0), "dev": (False, 0)}
    assert tcp_fs.lustre_efa_connections == 0


@pytest.mark.parametrize(
    ("instance_type", "client"),
    [
        ("p5.48xlarge", True),
        ("p5e.48xlarge", True),
        ("p5en.48xlarge", True),
        ("p6-b200.48xlarge", True),
        ("g6e.12xlarge", True),
        ("g6.12xlarge", True),
        ("hpc7a.96xlarge", True),
        ("trn1.32xlarge", True),
        ("c7i.48xlarge", True),
        ("p4d.24xlarge", False),  # Nitro v3
        ("p4de.24xlarge", False),  # Nitro v3
        ("g5.48xlarge", False),  # Nitro v3
        ("c5n.18xlarge", False),  # Nitro v3
        ("trn2.48xlarge", False),  # excluded by AWS
        ("x9z.48xlarge", False),  # unknown family: TCP
    ],
)
def test_efa_lustre_client_rule(instance_type: str, client: bool) -> None:
    assert is_efa_lustre_client(instance_type) is client


def test_efa_interface_defaults() -> None:
    assert lustre_efa_interface_count("p5.48xlarge", 32, 32) == 8
    assert lustre_efa_interface_count("p5en.48xlarge", 16, 16) == 8
    assert lustre_efa_interface_count("p6-b200.48xlarge", 8, 8) == 8
    assert lustre_efa_interface_count("hpc7a.96xlarge", 2, 2) == 2
    assert lustre_efa_interface_count("g6e.12xlarge", 1, 1) == 1
    assert lustre_efa_interface_count("p5.48xlarge", 32, 4) == 4  # never more than it has


@pytest.mark.parametrize(
    ("capacity", "setting", "placed", "name"),
    [
        ("on_demand", "auto", True, None),
        ("spot", "auto", True, None),
        ("capacity_block", "auto", False, None),
        # An ODCR cannot move into a placement group made after it: auto makes none.
        ("capacity_reservation", "auto", False, None),
        ("capacity_reservation", "odcr-pg", True, "odcr-pg"),
        ("capacity_reservation", False, False, None),
        ("on_demand", "shared-pg", True, "shared-pg"),
        ("on_demand", False, False, None),
    ],
)
def test_placement_group_by_capacity(capacity: str, setting: object, placed: bool, name) -> None:
    reserved = capacity in ("capacity_block", "capacity_reservation")
    pool = {
        "name": "gpu",
        "instance_type": "p5.48xlarge",
        "count": 2,
        "capacity": {
            "type": capacity,
            **({"reservation_id": "cr-0123456789abcdef0"} if reserved else {}),
        },
        "placement_group": setting,
    }
    spec = ClusterSpec.model_validate(
        {
            "name": "c1",
            "region": "us-east-1",
            "availability_zone": "us-east-1a",
            "head_node": {"instance_type": "m7i.xlarge"},
            "pools": [pool],
        }
    )
    planned = build_plan(spec).pool("gpu")
    assert (planned.placement_group, planned.placement_group_name) == (placed, name)
