"""`slurmstack plan`: the offline report of what `pulumi up` would build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from slurmstack.catalog import load_catalog
from slurmstack.report.cost import cost_report
from support.stack import EXAMPLE_IDS, example, plan_of, run_ok

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str, hash_seed: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "infra")}
    if hash_seed is not None:
        env["PYTHONHASHSEED"] = hash_seed
    return subprocess.run(
        [sys.executable, "-m", "slurmstack.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )


@cache
def plan_json(stem: str) -> dict[str, Any]:
    done = _cli("plan", f"examples/{stem}.yaml", "--json")
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


@pytest.mark.parametrize("stem", EXAMPLE_IDS)
def test_plan_json_matches_the_resources_the_stack_tests_see(stem: str) -> None:
    document = plan_json(stem)
    seen = run_ok(example(stem))
    expected = sorted((r.type, r.name) for r in seen.resources if r.type != "pulumi:pulumi:Stack")
    assert sorted((r["type"], r["name"]) for r in document["resources"]) == expected
    cloud = [r for r in document["resources"] if r["kind"] == "resource"]
    assert document["summary"]["resources"] == len(seen.custom) == len(cloud)
    assert sum(document["resource_counts"].values()) == len(cloud)


def test_p5_summary_by_hand() -> None:
    summary = plan_json("p5-training")["summary"]
    # 16 x p5.48xlarge (8 H100 each) + 2 x g6e.12xlarge (4 L40S each).
    assert summary["nodes"] == 18
    assert summary["gpus"] == 16 * 8 + 2 * 4
    assert summary["gpus_by_model"] == {"H100": 128, "L40S": 8}
    train = next(p for p in plan_json("p5-training")["capacity"]["pools"] if p["pool"] == "train")
    assert train["accelerator_memory_gib"] == 10_240  # 128 x 80 GiB
    assert train["efa_gbps_total"] == 16 * 3200
    catalog = load_catalog()
    p5, g6e, m7i = (
        catalog.instances[t].price for t in ("p5.48xlarge", "g6e.12xlarge", "m7i.4xlarge")
    )
    assert p5 and g6e and m7i
    instances = 16 * p5.usd_per_hour + 2 * g6e.usd_per_hour + m7i.usd_per_hour
    # Instances dominate; volumes, NAT, Lustre and the secret make up the rest.
    assert instances < summary["hourly_cost_usd"] < instances * 1.02
    assert summary["hourly_cost_usd"] == round(
        cost_report(plan_of(example("p5-training"))).hourly_usd, 2
    )


def test_elastic_pools_cost_at_max_and_when_idle_by_hand() -> None:
    """g6e-inference-spot: l40s 1 always-on + 7 elastic g6e.12xlarge, l4 0 + 4 elastic
    g6.12xlarge at max_spot_price 3.5. At max every node runs; idle, only l40s's one."""
    document = plan_json("g6e-inference-spot")
    summary = document["summary"]
    assert (summary["nodes"], summary["idle_nodes"]) == (12, 1)
    assert (summary["gpus"], summary["idle_gpus"]) == (48, 4)
    price = load_catalog().instances["g6e.12xlarge"].price
    assert price is not None
    # Each node's root volume: 200 GiB gp3 at $0.08 per GB-month plus 250 - 125 MiB/s of
    # throughput at $0.04 (service_prices.json), over a 720-hour month.
    volume = (200 * 0.08 + 125 * 0.04) / 720
    stopped = 7 * price.usd_per_hour + 4 * 3.5 + 11 * volume
    saved = summary["hourly_cost_usd"] - summary["idle_hourly_cost_usd"]
    assert saved == pytest.approx(stopped, abs=0.02)
    assert summary["idle_hourly_cost_usd"] > price.usd_per_hour  # the always-on node, the head
    assert document["cost"]["idle_hourly_usd"] == summary["idle_hourly_cost_usd"]
    text = _cli("plan", "examples/g6e-inference-spot.yaml")
    assert text.returncode == 0, text.stderr
    idle = next(line for line in text.stdout.splitlines() if line.startswith("total when idle"))
    assert f"${summary['idle_hourly_cost_usd']:,.2f}" in idle
    assert "1 nodes and 4 accelerators when idle" in text.stdout


def test_p4d_summary_by_hand() -> None:
    document = plan_json("p4d-odcr")
    summary = document["summary"]
    assert summary["nodes"] == 4
    assert summary["gpus"] == 32
    assert summary["gpu_memory_gib"] == 32 * 40
    price = load_catalog().instances["p4d.24xlarge"].price
    assert price is not None
    pool_line = next(
        line for line in document["cost"]["lines"] if line["item"].startswith("pool a100:")
    )
    assert pool_line["hourly_usd"] == pytest.approx(4 * price.usd_per_hour, abs=1e-3)


def test_plan_json_is_byte_identical_across_runs() -> None:
    # Two processes, different hash seeds: nothing in the document may depend on set or
    # protobuf map order (the stack outputs come back from a protobuf Struct).
    first, second = (
        _cli("plan", "examples/p5-training.yaml", "--json", hash_seed=seed) for seed in "12"
    )
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert len(json.loads(first.stdout)["outputs"]["pools"]) == 2
    assert first.stdout.encode() == second.stdout.encode()


def test_plan_reports_time_to_ready_with_sources() -> None:
    ready = plan_json("p5-training")["time_to_ready"]
    path = ready["critical_path"]
    assert path[-1]["step"] == "cluster ready"
    assert ready["seconds"] == path[-1]["finish_s"]
    assert all(step["basis"] for step in path)
    # The first deploy waits for the node images' bake (Image Builder, 30-60 min) ...
    image = next(step for step in path if step["step"].startswith("Image "))
    assert image["range_s"] == [1800, 3600] and "Image Builder" in image["basis"]
    # ... which later `pulumi up`s reuse: then Lustre gates this cluster, and passing its
    # address through SSM keeps the pools' boot off its path (embedding it would be slower).
    built = ready["images_built_critical_path"]
    assert ready["images_built_seconds"] == built[-1]["finish_s"] < ready["seconds"]
    assert ready["seconds"] - ready["images_built_seconds"] <= image["seconds"]
    assert any("LustreFileSystem" in step["step"] for step in built)
    assert ready["if_addresses_were_in_user_data_seconds"] > ready["images_built_seconds"]
    # Creation times that vary give a range around the typical total, step by step.
    low, high = ready["range_seconds"]
    assert low < ready["seconds"] < high
    lustre = next(step for step in built if "LustreFileSystem" in step["step"])
    assert lustre["range_s"] == [600, 1200]
    assert lustre["range_s"][0] <= lustre["seconds"] <= lustre["range_s"][1]
    fixed = [step for step in path if step["range_s"][0] == step["range_s"][1]]
    assert all(step["range_s"] == [step["seconds"]] * 2 for step in fixed)
    summary = plan_json("p5-training")["summary"]
    assert summary["time_to_ready_range_minutes"] == [round(low / 60, 1), round(high / 60, 1)]


def test_plan_text_output_has_every_section() -> None:
    done = _cli("plan", "examples/p4d-odcr.yaml")
    assert done.returncode == 0, done.stderr
    for title in (
        "Resources by component",
        "Capacity",
        "Storage tiers",
        "Cost at full size",
        "Time to ready",
    ):
        assert title in done.stdout


def test_plan_of_an_invalid_definition_exits_1_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        (REPO / "examples" / "p5-training.yaml").read_text().replace("p5.48xlarge", "p5.48xlarg")
    )
    done = _cli("plan", str(bad), "--json")
    assert done.returncode == 1
    assert "pools[0].instance_type" in done.stderr
    assert "Traceback" not in done.stderr
    # --json: the findings as a JSON document, so a pipeline reading it fails visibly.
    document = json.loads(done.stdout)
    assert document["valid"] is False
    assert [f["path"] for f in document["findings"] if f["level"] == "error"] == [
        "pools[0].instance_type"
    ]


@pytest.mark.parametrize("fmt", ["mermaid", "dot"])
def test_diagram_command(fmt: str) -> None:
    done = _cli("diagram", "examples/p5-training.yaml", "--format", fmt)
    assert done.returncode == 0, done.stderr
    assert "16 × p5.48xlarge" in done.stdout


def test_plan_json_lists_what_each_resource_waits_for() -> None:
    document = plan_json("p5-training")
    rows = document["resources"]
    names = {r["name"] for r in rows}
    assert all(set(r["depends_on"]) <= names for r in rows)
    # The same edges the engine recorded (explicit depends_on and inputs from outputs).
    seen = run_ok(example("p5-training"))
    by_urn = {r.urn: r for r in seen.resources}
    expected = {
        (r.type, r.name): sorted({by_urn[u].name for u in r.options.dependencies})
        for r in seen.resources
        if r.type != "pulumi:pulumi:Stack"
    }
    assert {(r["type"], r["name"]): r["depends_on"] for r in rows} == expected

    def waits_for(type_: str, name: str) -> list[str]:
        return next(r["depends_on"] for r in rows if r["type"] == type_ and r["name"] == name)

    # What gates what, by hand: the repository association needs the file system and the
    # bucket; the head node its instance profile; the file system its subnet.
    dra = waits_for(
        "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation", "llm-train-lustre-dra"
    )
    assert {"llm-train-lustre", "llm-train-bucket"} <= set(dra)
    assert "llm-train-head" in waits_for("aws:ec2/instance:Instance", "llm-train-head")
    assert "llm-train-compute" in waits_for(
        "aws:fsx/lustreFileSystem:LustreFileSystem", "llm-train-lustre"
    )
    assert waits_for("aws:ec2/vpc:Vpc", "llm-train-vpc") == []


UNPRICED_POOL = """
name: trn-blocks
region: us-east-2
availability_zone: us-east-2a
head_node: {instance_type: m7i.xlarge}
pools:
  - name: train
    instance_type: trn2.48xlarge
    count: 2
    capacity: {type: capacity_block, reservation_id: cr-0123456789abcdef0}
    root_volume: {size_gib: 512}
  - name: cpu
    instance_type: c7i.4xlarge
    count: 1
"""


def test_an_unpriced_pool_is_never_silently_left_out_of_the_total(tmp_path: Path) -> None:
    definition = tmp_path / "trn.yaml"
    definition.write_text(UNPRICED_POOL)
    done = _cli("plan", str(definition), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["summary"]
    assert summary["cost_complete"] is False
    assert summary["unpriced_pools"] == ["train"]
    # Until pools are elastic every node runs all the time: idle costs what full size does.
    assert summary["idle_hourly_cost_usd"] == summary["hourly_cost_usd"] > 0
    text = _cli("plan", str(definition))
    assert text.returncode == 0, text.stderr
    total = next(line for line in text.stdout.splitlines() if line.startswith("total (inc"))
    assert "leaves out what has no price: pool train: 2 × trn2.48xlarge" in total


def test_a_fully_priced_plan_says_so() -> None:
    summary = plan_json("p5-training")["summary"]
    assert summary["cost_complete"] is True
    assert summary["unpriced_pools"] == []


def test_piped_tables_are_never_cut() -> None:
    """Through a pipe, with a terminal width that would cut, every cell is whole."""
    env_width = {"COLUMNS": "60"}
    done = subprocess.run(
        [sys.executable, "-m", "slurmstack.cli", "plan", "examples/p5-training.yaml"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "infra"), **env_width},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout
    lines = plan_json("p5-training")["cost"]["lines"]
    for line in lines:
        row = next(r for r in done.stdout.splitlines() if r.startswith(line["item"]))
        assert line["basis"] in row and line["note"] in row, row


def test_tables_in_a_narrow_terminal_wrap_instead_of_cutting() -> None:
    import io

    from rich.console import Console

    from slurmstack.report.console import print_plan

    out = io.StringIO()
    print_plan(plan_json("p5-training"), Console(file=out, force_terminal=True, width=50))
    assert "…" not in out.getvalue()
    assert "Cost at full size" in out.getvalue()


def test_every_verb_reads_a_pulumi_stack_file(tmp_path: Path) -> None:
    """Pulumi.dev.yaml holds the p5 example under config: slurmstack:cluster; each verb
    gives for it what it gives for the example file."""
    stack, example_file = "Pulumi.dev.yaml", "examples/p5-training.yaml"
    assert _cli("validate", stack).stdout == _cli("validate", example_file).stdout
    assert _cli("diagram", stack).stdout == _cli("diagram", example_file).stdout
    for source, out in ((stack, tmp_path / "a"), (example_file, tmp_path / "b")):
        done = _cli("render", source, "--out", str(out))
        assert done.returncode == 0, done.stderr

    def files(root: Path) -> dict[Path, str]:
        return {p.relative_to(root): p.read_text() for p in root.rglob("*") if p.is_file()}

    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert len(files(tmp_path / "a")) > 10
    done = _cli("plan", stack, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == plan_json("p5-training")
