"""The acceptance run, against a simulated pool (support.SlurmPool): which steps it submits and
how, the verdict per pool, the bisection's drains with the documented reason, and what a user
who may not drain is told."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurmstack.contract import NCCL_TESTS_DIR, REASON_PREFIX
from slurmstack.node.cli import main
from slurmstack.node.workload import accept, report, steps
from support.workload import SlurmPool, head_context, names

pytestmark = pytest.mark.workload

TRAIN = names("train", 16)
DEV = names("dev", 2)


def p5_cluster(**kwargs) -> SlurmPool:
    idle = {n: "idle" for n in TRAIN}
    return SlurmPool({"train": idle, "dev": {n: "idle" for n in DEV}}, **kwargs)


def test_a_healthy_cluster_passes_every_pool(tmp_path: Path) -> None:
    slurm = p5_cluster()
    reports = accept.accept(head_context(tmp_path, "p5-training", slurm), accept.Options())
    assert [(r.pool, r.verdict) for r in reports] == [("train", "pass"), ("dev", "pass")]
    train = reports[0]
    assert train.nodes == TRAIN and train.node_check["ok"]
    assert train.fabric["kind"] == "nccl" and train.fabric["min_busbw_gbps"] == 355.0
    assert train.fabric["detail"] == "450 GB/s busbw, at least 355"
    # One node-check step and one all-reduce per pool, whole nodes, bounded, as the user.
    (allreduce,) = [c for c in slurm.sruns(NCCL_TESTS_DIR) if "--partition=train" in c]
    for option in ("--nodes=16", "--ntasks-per-node=8", "--gpus-per-node=8", "--mpi=pmix",
                   "--exclusive", f"--nodelist={','.join(TRAIN)}"):  # fmt: skip
        assert option in allreduce, option
    assert allreduce[-10:] == ["-b", "8", "-e", "2G", "-f", "2", "-g", "1", "-c", "1"]
    (check,) = [c for c in slurm.sruns("slurmstack-node") if "--partition=dev" in c]
    assert check[-5:] == ["/usr/local/bin/slurmstack-node", "node-check", "--pool", "dev", "--json"]
    assert "--ntasks-per-node=1" in check and "--gpus-per-node=4" in check
    assert not slurm.drained and report.ok(reports)


def test_nodes_still_completing_a_job_are_waited_for_then_tested(tmp_path: Path) -> None:
    # Acceptance right after a job: the Epilog still runs on two nodes for three sinfo reads.
    slurm = p5_cluster(completing={"train-3": 3, "train-9": 1})
    ctx = head_context(tmp_path, "p5-training", slurm)
    slept: list[float] = []
    ctx.sleep = slept.append
    (train,) = accept.accept(ctx, accept.Options(pools=("train",)))
    assert train.verdict == "pass" and train.nodes == TRAIN and train.unavailable == []
    assert len(slept) == 3 and len([c for c in slurm.calls if c[0] == "sinfo"]) == 4


def test_nodes_planned_for_a_job_that_has_gone_are_waited_for_then_tested(tmp_path: Path) -> None:
    # The backfill scheduler set three nodes aside for a job that has since run; the flag stays
    # until its next cycle. Acceptance waits for it instead of skipping the pool.
    slurm = p5_cluster(planned={"train-5": 2, "train-11": 2, "train-12": 2})
    ctx = head_context(tmp_path, "p5-training", slurm)
    slept: list[float] = []
    ctx.sleep = slept.append
    (train,) = accept.accept(ctx, accept.Options(pools=("train",)))
    assert train.verdict == "pass" and train.nodes == TRAIN and train.unavailable == []
    assert len(slept) == 2


@pytest.mark.parametrize("state", ["completing", "planned"])
def test_a_node_settling_for_ever_is_left_out_after_the_bound(tmp_path: Path, state: str) -> None:
    # Completing for ever: its Epilog hangs. Planned for ever: a pending job really wants it.
    slurm = p5_cluster(**{state: {"train-3": 10**6}})
    ctx = head_context(tmp_path, "p5-training", slurm)
    now = [0.0]
    ctx.clock = lambda: now[0]
    ctx.sleep = lambda seconds: now.__setitem__(0, now[0] + seconds)
    (train,) = accept.accept(ctx, accept.Options(pools=("train",)))
    assert train.unavailable == [f"train-3 ({state})"] and "train-3" not in train.nodes
    assert now[0] == steps.SETTLE_SECONDS  # waited the bound, no longer
    assert train.verdict == "pass"  # the other fifteen


def test_a_slow_node_fails_the_pool_and_bisection_drains_it(tmp_path: Path) -> None:
    slurm = p5_cluster(slow={"train-6"})
    options = accept.Options(pools=("train",), bisect=True)
    (train,) = accept.accept(head_context(tmp_path, "p5-training", slurm), options)
    assert train.verdict == "fail"
    assert train.fabric["detail"] == "141 GB/s busbw, below 355"
    assert train.bisect is not None and train.bisect["slow"] == ["train-6"]
    assert train.bisect["waves"] == 2 and train.bisect["unresolved"] == []
    (drained,) = train.bisect["drained"]
    assert drained["drained"] and drained["node"] == "train-6"
    partner = slurm.drained["train-6"].rsplit("pair with ", 1)[1].rstrip(")")
    assert partner in TRAIN and partner not in ("train-5", "train-6")
    # The documented form: slurmstack:<check>: <detail>.
    assert slurm.drained == {
        "train-6": f"{REASON_PREFIX}nccl-allreduce: 141 GB/s busbw, below 355 (pair with {partner})"
    }
    # The first wave: eight disjoint pairs at once; then train-5 and train-6 with good nodes.
    pair_runs = [c for c in slurm.sruns(NCCL_TESTS_DIR) if "--nodes=2" in c]
    assert len(pair_runs) == 8 + 2


def test_a_user_who_may_not_drain_is_given_the_command(tmp_path: Path) -> None:
    slurm = p5_cluster(slow={"train-6"}, operator=False)
    options = accept.Options(pools=("train",), bisect=True)
    (train,) = accept.accept(head_context(tmp_path, "p5-training", slurm), options)
    (entry,) = train.bisect["drained"]
    assert not entry["drained"] and entry["error"] == "slurm_update error: Invalid user id"
    assert entry["command"].startswith("scontrol update NodeName=train-6 State=DRAIN Reason='")
    text = report.as_text("llm-train", [train])
    assert "NOT drained train-6" in text and entry["command"] in text


def test_no_drain_reports_only(tmp_path: Path) -> None:
    slurm = p5_cluster(slow={"train-6"})
    options = accept.Options(pools=("train",), bisect=True, drain=False)
    (train,) = accept.accept(head_context(tmp_path, "p5-training", slurm), options)
    assert train.bisect["slow"] == ["train-6"] and train.bisect["drained"] == []
    assert not slurm.drained


def test_busy_nodes_are_left_out_and_a_pool_without_free_nodes_is_skipped(tmp_path: Path) -> None:
    states = {n: "idle" for n in TRAIN}
    states["train-3"], states["train-9"] = "allocated", "drained"
    slurm = SlurmPool({"train": states, "dev": {n: "mixed" for n in DEV}})
    reports = accept.accept(head_context(tmp_path, "p5-training", slurm), accept.Options())
    train, dev = reports
    assert "train-3" not in train.nodes and len(train.nodes) == 14
    assert train.unavailable == ["train-3 (allocated)", "train-9 (drained)"]
    assert dev.verdict == "skip" and dev.notes == ["no free node in the partition"]
    assert report.ok(reports)


def test_a_failed_node_check_fails_its_pool_and_names_the_node(tmp_path: Path) -> None:
    slurm = p5_cluster(failing_check={"dev-2": "3 GPUs, expected 4"})
    reports = accept.accept(head_context(tmp_path, "p5-training", slurm), accept.Options())
    dev = reports[1]
    assert dev.verdict == "fail"
    assert dev.node_check["failed"] == {"dev-2": ["gpus: 3 GPUs, expected 4"]}
    assert "node check failed on dev-2: gpus: 3 GPUs, expected 4" in dev.notes


def test_cpu_pools_run_the_mpi_all_reduce(tmp_path: Path) -> None:
    slurm = SlurmPool({"mpi": {n: "idle" for n in names("mpi", 8)}, "batch": {"batch-1": "idle"}})
    reports = accept.accept(head_context(tmp_path, "cpu-hpc", slurm), accept.Options())
    mpi, batch = reports
    assert mpi.verdict == "pass" and mpi.fabric == {
        "kind": "mpi",
        "ok": True,
        "detail": "8 ranks on 8 nodes",
    }
    (step,) = slurm.sruns("mpi-allreduce.sh")
    assert (
        "--mpi=pmix" in step
        and "--ntasks-per-node=1" in step
        and not any("gpus" in a for a in step)
    )
    assert batch.fabric["detail"] == "one node: nothing between nodes"


def test_the_command_prints_json_and_exits_non_zero_on_a_failure(tmp_path: Path, capsys) -> None:
    ctx = head_context(tmp_path, "p5-training", p5_cluster(slow={"train-2"}))
    assert main(["accept", "--json", "--pool", "train"], ctx=ctx) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["cluster"] == "llm-train" and document["ok"] is False
    (pool,) = document["pools"]
    assert pool["pool"] == "train" and pool["verdict"] == "fail" and pool["bisect"] is None
    assert main(["accept", "--pool", "nope"], ctx=ctx) == 1
    assert "no pool ['nope'] in this cluster: one of ['train', 'dev']" in capsys.readouterr().err


def placed(nodes: list[str], per_leaf: int) -> dict[str, str]:
    """Topology= values putting ``per_leaf`` nodes under each leaf, in order."""
    return {
        n: f"default:slurmstack-root:nn-top:nn-spine:nn-leaf{i // per_leaf}"
        for i, n in enumerate(nodes)
    }


def test_bandwidth_inside_and_between_leaves_is_reported(tmp_path: Path) -> None:
    slurm = p5_cluster(topology=placed(TRAIN, 4))
    (train,) = accept.accept(
        head_context(tmp_path, "p5-training", slurm), accept.Options(pools=("train",))
    )
    assert train.verdict == "pass", train.notes
    leaves = train.fabric["leaves"]
    assert [r["leaf"] for r in leaves["within"]] == [f"nn-leaf{i}" for i in range(4)]
    assert [r["pair"] for r in leaves["within"]] == [
        ["train-1", "train-2"], ["train-5", "train-6"], ["train-9", "train-10"],
        ["train-13", "train-14"],
    ]  # fmt: skip
    assert [r["leaves"] for r in leaves["across"]] == [
        ["nn-leaf0", "nn-leaf1"], ["nn-leaf1", "nn-leaf2"], ["nn-leaf2", "nn-leaf3"],
    ]  # fmt: skip
    assert all(r["ok"] for r in leaves["within"] + leaves["across"])
    assert leaves["diagnosis"] == "inside and between leaf switches alike"
    # Four pairs inside leaves in one wave, three between them in one (disjoint) wave.
    pair_runs = [c for c in slurm.sruns(NCCL_TESTS_DIR) if "--nodes=2" in c]
    assert len(pair_runs) == 4 + 3
    text = report.as_text("llm-train", [train])
    assert "leaf switches: inside and between leaf switches alike" in text
    assert "between nn-leaf0 and nn-leaf1 (train-4+train-5): 450 GB/s busbw" in text


def test_a_slow_spine_is_told_from_a_slow_node_and_no_node_is_drained(tmp_path: Path) -> None:
    slurm = p5_cluster(topology=placed(TRAIN, 4), slow_between_leaves=True)
    options = accept.Options(pools=("train",), bisect=True)
    (train,) = accept.accept(head_context(tmp_path, "p5-training", slurm), options)
    assert train.verdict == "fail"
    leaves = train.fabric["leaves"]
    assert all(r["ok"] for r in leaves["within"]) and not any(r["ok"] for r in leaves["across"])
    assert leaves["diagnosis"].startswith("slow between leaf switches (nn-leaf0-nn-leaf1,")
    assert "not a node" in leaves["diagnosis"]
    assert train.bisect is None and not slurm.drained
    assert "no bisection: the slow part is between leaf switches, not a node" in train.notes


def test_a_slow_node_under_a_leaf_is_still_bisected_and_drained(tmp_path: Path) -> None:
    slurm = p5_cluster(topology=placed(TRAIN, 4), slow={"train-2"})
    options = accept.Options(pools=("train",), bisect=True)
    (train,) = accept.accept(head_context(tmp_path, "p5-training", slurm), options)
    assert train.verdict == "fail"
    assert train.fabric["leaves"]["diagnosis"] == (
        "slow inside leaf switch nn-leaf0: a node there (or that switch)"
    )
    assert train.bisect is not None and train.bisect["slow"] == ["train-2"]
    assert list(slurm.drained) == ["train-2"]


def test_unplaced_nodes_or_one_leaf_run_no_leaf_pairs(tmp_path: Path) -> None:
    unplaced = {n: "default:slurmstack-root:slurmstack-unplaced" for n in TRAIN}
    for topology in (unplaced, placed(TRAIN, 16)):
        slurm = p5_cluster(topology=topology)
        ctx = head_context(tmp_path / str(len(slurm.calls) + id(topology)), "p5-training", slurm)
        (train,) = accept.accept(ctx, accept.Options(pools=("train",)))
        assert train.verdict == "pass" and "leaves" not in train.fabric
        assert not [c for c in slurm.sruns(NCCL_TESTS_DIR) if "--nodes=2" in c]
