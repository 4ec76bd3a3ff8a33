"""The plan's Slurm, EFA and mount derivations."""

from __future__ import annotations

import pytest

from helpers_examples import EXAMPLE_IDS, example_plan
from slurmstack.plan import (
    MAX_NODE_COUNT_STEP,
    SLURMCTLD_PORT,
    SLURMD_PORT,
    SRUN_PORT_RANGE,
    MountKind,
    PlanError,
    build_plan,
)
from slurmstack.spec import ClusterSpec


def test_ports_match_the_stack_security_groups() -> None:
    common = pytest.importorskip("slurmstack.stack.common")
    assert (SLURMCTLD_PORT, SLURMD_PORT, SRUN_PORT_RANGE) == (
        common.SLURMCTLD_PORT,
        common.SLURMD_PORT,
        common.SRUN_PORT_RANGE,
    )


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
