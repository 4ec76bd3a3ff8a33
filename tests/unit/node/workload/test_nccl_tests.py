"""nccl-tests' output as a verdict, against recorded outputs in nccl-tests' own format
(data/nccl): a healthy two-node p5 run, a four-node p5 run held back by a slow node, a p4de
run in which a rank fails, and a g6e run with wrong results as `srun -l` labels it."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack.node.workload import nccl_tests
from slurmstack.plan.workload import acceptance
from support.examples import example_plan

pytestmark = pytest.mark.workload

DATA = Path(__file__).resolve().parent / "data" / "nccl"
GIB2 = 2 * 1024**3


def recorded(name: str) -> nccl_tests.Run:
    return nccl_tests.parse((DATA / name).read_text())


def p5_threshold() -> float:
    threshold = acceptance(example_plan("p5-training")).pool("train").threshold
    assert threshold is not None
    return threshold.min_busbw_gbps


def test_a_healthy_p5_pair_passes_the_p5_threshold() -> None:
    run = recorded("p5-2node-good.txt")
    assert run.completed and len(run.ranks) == 16
    assert run.hosts == ["ip-10-42-3-17", "ip-10-42-3-88"]
    assert len(run.rows) == 29 and run.rows[0].size == 8 and run.rows[-1].size == GIB2
    assert run.avg_busbw == pytest.approx(119.791)
    verdict = nccl_tests.judge(run, p5_threshold(), GIB2)
    assert verdict.ok, verdict.detail
    assert verdict.busbw_gbps == pytest.approx(464.64)
    assert verdict.detail == "465 GB/s busbw, at least 355"


def test_a_slow_node_fails_the_threshold_and_says_by_how_much() -> None:
    run = recorded("p5-4node-slow.txt")
    assert run.completed and len(run.hosts) == 4
    verdict = nccl_tests.judge(run, p5_threshold(), GIB2)
    assert not verdict.ok
    assert verdict.busbw_gbps == pytest.approx(140.73)
    assert verdict.detail == "141 GB/s busbw, below 355"
    # The average of the footer is not what is judged (small messages drag it down).
    assert run.avg_busbw is not None and run.avg_busbw < 50
    assert nccl_tests.judge(run, 120.0, GIB2).ok


def test_a_failed_rank_fails_the_run_and_names_its_host() -> None:
    run = recorded("p4de-2node-failed-rank.txt")
    assert not run.completed and run.avg_busbw is None
    verdict = nccl_tests.judge(run, 62.7, GIB2)
    assert not verdict.ok and verdict.busbw_gbps is None
    assert verdict.detail.startswith("did not complete: NCCL failure: remote process exited")
    assert verdict.detail.endswith("(on ip-10-7-1-14)")
    # The failing host, then the nodes srun reports, each once.
    assert verdict.failed_hosts == ("ip-10-7-1-14", "a100-270", "a100-200")


def test_wrong_results_fail_whatever_the_bandwidth() -> None:
    run = recorded("g6e-2node-wrong-labelled.txt")
    # srun -l's "0: " labels are taken off: every row and rank line is read.
    assert len(run.ranks) == 8 and len(run.rows) == 29 and run.completed
    verdict = nccl_tests.judge(run, 6.25, GIB2)
    assert not verdict.ok
    assert verdict.detail == f"wrong results at {2**26} B: data corrupted between GPUs"
    assert run.row(GIB2) is not None and run.row(GIB2).busbw_out > 6.25  # fast, yet wrong


def test_a_run_cut_short_or_missing_the_judged_size_fails() -> None:
    text = (DATA / "p5-2node-good.txt").read_text()
    cut = text[: text.index("# Out of bounds")]
    verdict = nccl_tests.judge(nccl_tests.parse(cut), 355.0, GIB2)
    assert not verdict.ok and verdict.detail.startswith("did not complete: output ends after")
    short = "\n".join(
        line for line in text.splitlines() if not line.lstrip().startswith("2147483648")
    )
    verdict = nccl_tests.judge(nccl_tests.parse(short), 355.0, GIB2)
    assert (
        not verdict.ok
        and verdict.detail == f"no result at {GIB2} B (largest: {2**30} B): run with -e 2G"
    )
    assert not nccl_tests.judge(nccl_tests.parse(""), 355.0, GIB2).ok


def test_without_a_threshold_a_complete_correct_run_passes() -> None:
    verdict = nccl_tests.judge(recorded("p5-4node-slow.txt"), None, GIB2)
    assert verdict.ok and verdict.detail == "141 GB/s busbw (no threshold: no EFA)"


@pytest.mark.parametrize(("value", "shown"), [(464.64, "465"), (62.72, "62.7"), (6.25, "6.25")])
def test_bandwidths_print_with_sensible_precision(value: float, shown: str) -> None:
    assert nccl_tests.gbps(value) == shown


def test_the_peer_nccl_names_is_the_host_that_failed() -> None:
    """kolyoz2's NCCL says its completion from peer 10.0.35.1 failed (NVIDIA/nccl-tests#252):
    the verdict names that peer, not only that the output ends."""
    verdict = nccl_tests.judge(recorded("nccl-tests-252-ib-peer-error.txt"), 62.7, GIB2)
    assert not verdict.ok
    assert verdict.detail == (
        "did not complete: no result, no summary; kolyoz2 names peer 10.0.35.1: NET/IB : Got "
        "completion from peer 10.0.35.1<49189> with error 4, opcode 5327, len 5327, vendor err "
        "81 (Send)"
    )


def test_a_peer_named_by_its_full_name_is_put_on_its_host() -> None:
    """NCCL names the remote peer gpu004.ds-a4-r02.abc.com (NVIDIA/nccl-tests#166): the host of
    the run it is, gpu004, is among the failed hosts."""
    verdict = nccl_tests.judge(recorded("nccl-tests-166-remote-peer-fqdn.txt"), None, GIB2)
    assert verdict.failed_hosts == ("gpu004",)
    assert "gpu004 names peer gpu004 (gpu004.ds-a4-r02.abc.com): socketProgress" in verdict.detail


def test_the_failing_host_and_the_peer_its_loss_was_seen_from() -> None:
    """DisAI-4090-2's test fails; DisAI-4090-3 then loses its connection (NVIDIA/nccl-tests#204)."""
    verdict = nccl_tests.judge(recorded("nccl-tests-204-internal-error.txt"), None, GIB2)
    assert verdict.detail.startswith(
        "did not complete: NCCL failure: internal error - please report this issue to the NCCL "
        "developers (on DisAI-4090-2); DisAI-4090-3 names peer 10.102.0.232: "
    )
    assert verdict.failed_hosts == ("DisAI-4090-2",)


def test_mpirun_tagged_output_is_read() -> None:
    """Open MPI's --tag-output puts [1,<rank>]<stdout>: before every line (aws/aws-k8s-tester#464):
    the ranks' hosts are read, and a bootstrap address is put on its host."""
    run = recorded("mpirun-tag-output-header.txt")
    assert run.hosts == ["multi-node-nccl-test-worker-0", "multi-node-nccl-test-worker-1"]
    assert run.nccl.host_of("192.168.24.153", run.hosts) == "multi-node-nccl-test-worker-0"
