"""What acceptance expects of each pool: all-reduce thresholds from AWS's published figures or
derived from the catalog (each saying how), the collective per kind of pool, and
acceptance.json read back as written."""

from __future__ import annotations

import pytest

from slurmstack.catalog import load_catalog
from slurmstack.contract import Acceptance, Collective, dump_document, load_document
from slurmstack.plan import build_plan, workload
from support.examples import EXAMPLE_IDS, example_plan

pytestmark = pytest.mark.workload

CATALOG = load_catalog()


def threshold(instance_type: str):
    facts = CATALOG.instance(instance_type)
    assert facts is not None
    return workload.threshold_for(instance_type, facts, CATALOG)


def test_published_types_pass_at_80_percent_of_their_figure() -> None:
    for baseline in workload.ALLREDUCE_BASELINES:
        found = threshold(baseline.instance_type)
        assert found.min_busbw_gbps == pytest.approx(0.8 * baseline.busbw_gbps, abs=0.05)
        assert found.message_bytes == 2 * 1024**3 == baseline.message_bytes
        assert (
            str(baseline.busbw_gbps) in found.basis and "awsome-distributed-training" in found.basis
        )
    assert threshold("p5.48xlarge").min_busbw_gbps == 355.0
    assert threshold("p4de.24xlarge").min_busbw_gbps == 62.7


@pytest.mark.parametrize(
    ("instance_type", "reference", "expected"),
    [
        ("p4d.24xlarge", "p4de.24xlarge", 62.7),  # the same 8 A100s and 4 x 100 Gbit/s EFA
        ("p5e.48xlarge", "p5.48xlarge", 355.0),
        ("p5en.48xlarge", "p5.48xlarge", 355.0),
        ("p6-b200.48xlarge", "p5.48xlarge", 355.0),
    ],
)
def test_types_like_a_published_one_scale_its_figure_by_line_rate(
    instance_type: str, reference: str, expected: float
) -> None:
    found = threshold(instance_type)
    assert found.min_busbw_gbps == expected
    assert found.basis.startswith(f"derived: 80% of {reference}'s published")
    assert "scaled by line rate" in found.basis


@pytest.mark.parametrize(
    ("instance_type", "expected"),
    [("g6e.12xlarge", 6.25), ("g6e.48xlarge", 25.0), ("g5.48xlarge", 6.25), ("p5.4xlarge", 6.25)],
)
def test_other_efa_types_need_half_their_line_rate(instance_type: str, expected: float) -> None:
    found = threshold(instance_type)
    facts = CATALOG.instance(instance_type)
    assert facts is not None
    assert found.min_busbw_gbps == expected == facts.network_gbps / 8 / 2
    assert found.basis.startswith("derived: 50% of the EFA line rate")
    assert f"no published figure for {instance_type}" in found.basis


def test_each_kind_of_pool_gets_its_collective() -> None:
    p5 = workload.acceptance(example_plan("p5-training"))
    assert p5.pool("train").collective is Collective.NCCL and p5.pool("train").gpus_per_node == 8
    assert (
        p5.pool("train").efa_devices == 32 and p5.pool("train").mpi_bin == "/opt/amazon/openmpi/bin"
    )
    assert "/scratch" in p5.pool("train").mounts and "/fsx" in p5.pool("train").mounts
    assert ("FI_PROVIDER", "efa") in p5.pool("train").env
    cpu = workload.acceptance(example_plan("cpu-hpc"))
    assert {p.collective for p in cpu.pools} == {Collective.MPI}
    # CPU images carry the EFA installer's Open MPI too (image_pins.json, efa_installer).
    assert all(p.threshold is None and not p.allreduce_args for p in cpu.pools)
    assert {p.mpi_bin for p in cpu.pools} == {"/opt/amazon/openmpi/bin"}
    trn = workload.acceptance(example_plan("trainium"))
    assert {p.collective for p in trn.pools} == {Collective.NONE}


def test_a_gpu_pool_without_efa_is_run_but_not_held_to_a_threshold() -> None:
    plan = example_plan("p5-training")
    spec = plan.spec.model_dump(mode="json")
    spec["pools"][1]["efa"] = False
    dev = workload.acceptance(build_plan(type(plan.spec).model_validate(spec))).pool("dev")
    assert dev.collective is Collective.NCCL and dev.threshold is None and dev.efa_devices == 0
    assert dev.allreduce_args  # still run: it must complete and be correct


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_acceptance_json_reads_back_what_render_wrote(example: str) -> None:
    written = workload.acceptance(example_plan(example))
    text = dump_document(written)
    assert load_document(Acceptance, text) == written
    assert dump_document(load_document(Acceptance, text)) == text


def test_checkpoints_go_to_lustre_else_to_the_shared_home() -> None:
    assert workload.checkpoint_root(example_plan("p5-training")) == "/fsx/checkpoints/$user"
    plan = example_plan("g6e-inference-spot")
    expected = "/fsx/checkpoints/$user" if plan.lustre else "$HOME/checkpoints"
    assert workload.checkpoint_root(plan) == expected
