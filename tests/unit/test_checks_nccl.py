"""Rules in slurmstack.checks.nccl: each case triggers exactly its rule."""

from __future__ import annotations

import pytest

from slurmstack.findings import Level
from support.checks import Case, add_pool, both, check_case, definition, findings, set_in

W = Level.WARNING


def env(**values: object) -> object:
    return set_in("nccl.env", values)


CASES = [
    Case("nccl-env-name", env(LD_PRELOAD="/tmp/x.so"), "nccl.env.LD_PRELOAD", "not an NCCL"),
    Case(
        "nccl-env-name",
        env(nccl_debug="INFO"),
        "nccl.env.nccl_debug",
        "upper case",
        name="lowercase",
    ),
    Case("nccl-env-value", env(NCCL_DEBUG="INFO\nX=1"), "nccl.env.NCCL_DEBUG", "line break"),
    Case("nccl-rdmav", env(RDMAV_FORK_SAFE=1), "nccl.env.RDMAV_FORK_SAFE", "harmful"),
    Case(
        "nccl-rdmav",
        env(RDMAV_HUGEPAGES_SAFE=1),
        "nccl.env.RDMAV_HUGEPAGES_SAFE",
        "advises against",
        level=W,
        name="other",
    ),
    Case(
        "nccl-fork-safe",
        env(FI_EFA_FORK_SAFE=1),
        "nccl.env.FI_EFA_FORK_SAFE",
        "not needed",
        level=W,
    ),
    Case(
        "nccl-proto-simple",
        env(NCCL_PROTO="simple"),
        "nccl.env.NCCL_PROTO",
        "aws-ofi-nccl <= 1.5.0",
        level=W,
    ),
    Case(
        "nccl-fi-provider",
        env(FI_PROVIDER="tcp"),
        "nccl.env.FI_PROVIDER",
        "keeps libfabric off EFA on pools train",
    ),
    Case(
        "nccl-fi-provider",
        both(set_in("pools.0.efa", False), env(FI_PROVIDER="efa")),
        "nccl.env.FI_PROVIDER",
        "no pool has EFA",
        level=W,
        also=frozenset({"efa-disabled"}),
        name="no-efa",
    ),
    Case(
        "nccl-net-socket",
        env(NCCL_NET="Socket"),
        "nccl.env.NCCL_NET",
        "NCCL_NET=Socket keeps NCCL off EFA on pools train",
    ),
    Case(
        "nccl-net-socket",
        env(NCCL_NET="socket"),
        "nccl.env.NCCL_NET",
        "set NCCL_NET=Socket in that job's environment",
        name="case",
    ),
    Case(
        "nccl-device-rdma",
        both(
            add_pool(name="dev", instance_type="g6e.8xlarge", count=1),
            env(FI_EFA_USE_DEVICE_RDMA=1),
        ),
        "nccl.env.FI_EFA_USE_DEVICE_RDMA",
        "dev (g6e.8xlarge) have no GPUDirect RDMA",
    ),
    Case(
        "nccl-not-applicable",
        env(NCCL_IB_HCA="mlx5"),
        "nccl.env.NCCL_IB_HCA",
        "InfiniBand",
        level=W,
    ),
    Case(
        "nccl-not-applicable",
        env(NCCL_SOCKET_NTHREADS=4),
        "nccl.env.NCCL_SOCKET_NTHREADS",
        "socket transport",
        level=W,
        name="socket",
    ),
    Case(
        "nccl-socket-ifname",
        env(NCCL_SOCKET_IFNAME="ens5"),
        "nccl.env.NCCL_SOCKET_IFNAME",
        "exclusion such as ^lo,docker",
        level=W,
    ),
    Case(
        "nccl-tuning-override",
        env(NCCL_P2P_DISABLE=1),
        "nccl.env.NCCL_P2P_DISABLE",
        "NVLink",
        level=W,
    ),
    Case(
        "nccl-env-no-gpu",
        set_in("pools.0", {"name": "train", "instance_type": "c7i.4xlarge", "count": 2}),
        "nccl.env.NCCL_DEBUG",
        "no pool has NVIDIA GPUs",
        level=W,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize(
    "safe",
    [
        {"NCCL_P2P_DISABLE": 0},
        {"NCCL_SOCKET_IFNAME": "^lo,docker"},
        {"FI_EFA_USE_DEVICE_RDMA": 1},  # every EFA pool of the base (p5) has GPUDirect RDMA
        {"FI_PROVIDER": "efa"},
        {"TORCH_NCCL_ASYNC_ERROR_HANDLING": 1, "OFI_NCCL_PROTOCOL": "RDMA"},
    ],
)
def test_accepted_settings_produce_no_finding(safe: dict[str, object]) -> None:
    assert findings(definition(set_in("nccl.env", safe))) == []


def test_socket_transport_is_fine_where_no_pool_has_efa() -> None:
    mutate = both(set_in("pools.0.efa", False), env(NCCL_NET="Socket"))
    assert [f.rule for f in findings(definition(mutate))] == ["efa-disabled"]
