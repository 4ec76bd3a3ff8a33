"""Capacity figures checked against values computed by hand from the vendors' datasheets."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack.loader import load_file
from slurmstack.plan import build_plan
from slurmstack.report.capacity import cluster_capacity

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _capacity(name: str):  # type: ignore[no-untyped-def]
    loaded = load_file(EXAMPLES / name)
    assert loaded.spec is not None, loaded.findings
    return cluster_capacity(build_plan(loaded.spec))


def test_p5_example_by_hand() -> None:
    cap = _capacity("p5-training.yaml")
    train = next(p for p in cap.pools if p.pool == "train")
    # 16 nodes x 8 H100 (80 GiB HBM3 each, 989.5 dense BF16 TFLOP/s each, 3,200 Gbit/s EFA).
    assert train.accelerators == 128
    assert train.accelerator_memory_gib == pytest.approx(10_240)
    assert train.bf16_dense_pflops == pytest.approx(128 * 989.5 / 1000)
    assert train.efa_gbps_per_node == 3200
    assert train.efa_gbps_total == 16 * 3200
    # p5.48xlarge: 96 cores, 2,048 GiB, 8 x 3.8 TB NVMe under /scratch.
    assert train.cpu_cores == 16 * 96
    assert train.memory_gib == pytest.approx(16 * 2048)
    assert train.scratch_gb_per_node == 8 * 3800
    dev = next(p for p in cap.pools if p.pool == "dev")
    # 2 nodes x 4 L40S (g6e.12xlarge).
    assert dev.accelerators == 8
    assert cap.accelerators == 136
    assert cap.accelerators_by_model == {"H100": 128, "L40S": 8}
    assert cap.nodes == 18


def test_p4d_example_by_hand() -> None:
    cap = _capacity("p4d-odcr.yaml")
    (pool,) = cap.pools
    # 4 nodes x 8 A100 40 GB (40 GiB each), 312 dense BF16 TFLOP/s, 400 Gbit/s EFA.
    assert pool.accelerators == 32
    assert pool.accelerator_memory_gib == pytest.approx(32 * 40)
    assert pool.bf16_dense_pflops == pytest.approx(32 * 312 / 1000)
    assert pool.efa_gbps_total == 4 * 400
    assert pool.cpu_cores == 4 * 48


def test_cpu_cluster_has_no_accelerators() -> None:
    cap = _capacity("cpu-hpc.yaml")
    assert cap.accelerators == 0
    assert cap.bf16_dense_pflops == 0
    mpi = next(p for p in cap.pools if p.pool == "mpi")
    # hpc7a.96xlarge: 192 cores, 768 GiB, 300 Gbit/s EFA; c7i has no EFA here.
    assert mpi.cpu_cores == 8 * 192
    assert mpi.efa_gbps_per_node == 300
    batch = next(p for p in cap.pools if p.pool == "batch")
    assert batch.efa_gbps_total == 0
