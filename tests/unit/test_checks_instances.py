"""Rules in slurmstack.checks.instances: each case triggers exactly its rule."""

from __future__ import annotations

from typing import Any

import pytest

from slurmstack.findings import Level
from support.checks import CUSTOM_FACTS, Case, both, check_case, set_in

W = Level.WARNING
ARM_GPU: dict[str, Any] = {
    **CUSTOM_FACTS,
    "architecture": "arm64",
    "accelerator": {
        "kind": "gpu",
        "vendor": "NVIDIA",
        "model": "T4G",
        "count": 1,
        "memory_gib": 16,
        "bf16_dense_tflops": 65,
        "gres_type": "t4g",
    },
}


def custom_pool(instance_type: str = "x9.4xlarge", **facts: Any) -> Any:
    """Replace pool 1 with a type described in the definition."""
    pool = {"name": "cpu", "instance_type": instance_type, "count": 2}
    return set_in("pools.1", {**pool, "instance_facts": {**CUSTOM_FACTS, **facts}})


CASES = [
    Case(
        "instance-type-unknown",
        set_in("pools.0.instance_type", "p5.48xlarg"),
        "pools[0].instance_type",
        "did you mean 'p5.48xlarge'",
        also=frozenset({"nccl-env-no-gpu"}),
    ),
    Case(
        "instance-type-unknown",
        set_in("head_node.instance_type", "m7i.4xlarg"),
        "head_node.instance_type",
        "unknown instance type 'm7i.4xlarg'",
        name="head",
    ),
    Case(
        "instance-type-form",
        custom_pool("Custom_Type"),
        "pools[1].instance_type",
        "not an EC2 type name",
    ),
    Case(
        "instance-facts-shadow",
        custom_pool("c7i.4xlarge"),
        "pools[1].instance_facts",
        "replace the catalog's",
        level=W,
    ),
    Case(
        "instance-facts-cpu-layout",
        custom_pool(vcpus=12),
        "pools[1].instance_facts.vcpus",
        "not cores x threads_per_core",
    ),
    Case(
        "instance-facts-cpu-layout",
        custom_pool(sockets=3),
        "pools[1].instance_facts.sockets",
        "3 sockets",
        name="sockets",
    ),
    Case(
        "instance-facts-efa",
        custom_pool(efa_supported=True),
        "pools[1].instance_facts.max_efa_interfaces",
        "max_efa_interfaces is 0",
    ),
    Case(
        "instance-facts-efa",
        custom_pool(max_efa_interfaces=2),
        "pools[1].instance_facts.efa_supported",
        "efa_supported is false",
        name="flag",
    ),
    Case(
        "instance-facts-gpudirect",
        custom_pool(gpudirect_rdma=True),
        "pools[1].instance_facts.gpudirect_rdma",
        "needs an EFA-capable type with accelerators",
    ),
    Case(
        "efa-unsupported",
        set_in("pools.1.efa", True),
        "pools[1].efa",
        "c7i.4xlarge does not support EFA",
    ),
    Case("efa-disabled", set_in("pools.0.efa", False), "pools[0].efa", "will use TCP", level=W),
    Case(
        "local-scratch-no-nvme",
        set_in("pools.1.local_scratch", "/scratch"),
        "pools[1].local_scratch",
        "no instance NVMe disks",
    ),
    Case(
        "head-node-accelerator",
        set_in("head_node.instance_type", "g6e.xlarge"),
        "head_node.instance_type",
        "1 L40S accelerators",
        level=W,
    ),
    Case(
        "head-node-small",
        set_in("head_node.instance_type", "m7a.medium"),
        "head_node.instance_type",
        "at least 2 vCPUs",
        level=W,
        also=frozenset({"accounting-head-memory"}),  # and too small for MariaDB too
    ),
    Case(
        "head-node-small",
        both(set_in("head_node.instance_type", "m7i.large"), set_in("pools.1.count", 100)),
        "head_node.instance_type",
        "small for 104 nodes",
        level=W,
        also=frozenset({"accounting-head-memory"}),
        name="large-cluster",
    ),
    Case(
        "head-architecture-mismatch",
        custom_pool("x9g.4xlarge", architecture="arm64"),
        "pools[1].instance_type",
        "is arm64 but the head node is x86_64",
        level=W,
    ),
    Case(
        "default-ami-architecture",
        set_in(
            "pools.1",
            {"name": "cpu", "instance_type": "x9g.4xlarge", "count": 2, "instance_facts": ARM_GPU},
        ),
        "pools[1].ami",
        "default Deep Learning AMI is x86_64",
        also=frozenset({"head-architecture-mismatch"}),
    ),
    # 100-119 GiB passed the old 100 GiB floor and could not launch the 120 GiB image.
    Case(
        "root-volume-image-snapshot",
        set_in("pools.0.root_volume", {"size_gib": 110}),
        "pools[0].root_volume.size_gib",
        "110 GiB is smaller than the 120 GiB root snapshot of the nvidia image",
    ),
    Case(
        "root-volume-image-snapshot",
        both(
            set_in("pools.0", {"name": "trn", "instance_type": "trn1.32xlarge", "count": 2}),
            set_in("slurm.default_partition", "trn"),
        ),
        "pools[0].root_volume.size_gib",
        "200 GiB is smaller than the 512 GiB root snapshot of the neuron image",
        also=frozenset({"nccl-env-no-gpu"}),
        name="neuron",
    ),
    Case(
        "root-volume-iops-ratio",
        set_in("head_node.root_volume", {"size_gib": 30, "iops": 16000}),
        "head_node.root_volume.iops",
        "raise size_gib to at least 32",
    ),
    Case(
        "root-volume-throughput-ratio",
        set_in("pools.1.root_volume", {"throughput_mibps": 1000}),
        "pools[1].root_volume.throughput_mibps",
        "needs at least 4000 IOPS",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)
