"""`slurmstack plan FILE --against OLD`: a definition, a Pulumi.<stack>.yaml or a saved
`plan --json` as what runs now; a table, --json, and --fail-on for CI pipelines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "p5-training.yaml"


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "infra")}
    return subprocess.run(
        [sys.executable, "-m", "slurmstack.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )


def changed(tmp_path: Path, name: str, edit) -> Path:  # type: ignore[no-untyped-def]
    definition = yaml.safe_load(EXAMPLE.read_text())
    edit(definition)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(definition))
    return path


def test_a_resize_against_a_definition_is_live(tmp_path: Path) -> None:
    bigger = changed(tmp_path, "bigger.yaml", lambda d: d["pools"][0].update(count=20))
    done = cli("plan", bigger, "--against", EXAMPLE, "--fail-on", "disruptive")
    assert done.returncode == 0, done.stderr
    assert "pool train: 16 -> 20 always-on nodes" in done.stdout
    assert "Worst: pushed live." in done.stdout


def test_a_stack_file_and_a_saved_plan_are_what_runs_now(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.prod.yaml"
    stack.write_text(
        yaml.safe_dump({"config": {"slurmstack:cluster": yaml.safe_load(EXAMPLE.read_text())}})
    )
    saved = tmp_path / "deployed.json"
    done = cli("plan", stack, "--json")
    assert done.returncode == 0, done.stderr
    saved.write_text(done.stdout)
    newer = changed(tmp_path, "newer.yaml", lambda d: d.setdefault("image", {}).update(version=2))
    for old in (stack, saved):
        done = cli("plan", newer, "--against", old, "--json")
        assert done.returncode == 0, done.stderr
        changes = json.loads(done.stdout)["changes"]
        assert changes["class"] == "rolling"
        rolled = {c["name"] for c in changes["changes"] if c["class"] == "rolling"}
        assert rolled == {"llm-train-pool-train", "llm-train-pool-dev"}
        assert changes["summary"]["by_class"]["disruptive"] == 0


def test_fail_on_stops_a_pipeline_at_a_disruptive_change(tmp_path: Path) -> None:
    smaller = changed(
        tmp_path,
        "smaller.yaml",
        lambda d: d["storage"]["lustre"].update(deployment="PERSISTENT_1", throughput_per_tib=100),
    )
    done = cli("plan", smaller, "--against", EXAMPLE, "--fail-on", "disruptive")
    assert done.returncode == 3, done.stderr
    assert "DISRUPTIVE" in done.stdout and "llm-train-lustre" in done.stdout
    assert "the change is disruptive, at or above --fail-on disruptive" in done.stderr
    lenient = cli("plan", smaller, "--against", EXAMPLE)
    assert lenient.returncode == 0


@pytest.mark.parametrize(
    ("old", "message"),
    [
        ("broken.yaml", "(--against): invalid"),
        ("old.json", "has no inputs: the plan was saved by a slurmstack that did not keep them"),
    ],
)
def test_a_bad_old_side_is_a_clear_error(tmp_path: Path, old: str, message: str) -> None:
    path = tmp_path / old
    if old.endswith(".yaml"):
        path.write_text("name: BAD\n")
    else:
        path.write_text(
            json.dumps(
                {"cluster": "x", "resources": [{"kind": "resource", "name": "a", "type": "t"}]}
            )
        )
    done = cli("plan", EXAMPLE, "--against", path)
    assert done.returncode == 1
    assert message in done.stderr and "Traceback" not in done.stderr


def test_fail_on_without_against_is_a_usage_error() -> None:
    done = cli("plan", EXAMPLE, "--fail-on", "disruptive")
    assert done.returncode == 2 and "--fail-on needs --against" in done.stderr


def at_release(tmp_path: Path, name: str, head: str, pools: str | None = None) -> Path:
    """The example at Slurm ``head``, its pools pinned to ``pools`` (a staged upgrade)."""

    def edit(definition: dict) -> None:  # type: ignore[type-arg]
        definition.setdefault("slurm", {})["version"] = head
        for pool in definition["pools"]:
            pool.pop("slurm_version", None)
            if pools is not None:
                pool["slurm_version"] = pools

    return changed(tmp_path, name, edit)


def test_a_slurm_release_going_back_is_refused(tmp_path: Path) -> None:
    newer = at_release(tmp_path, "newer.yaml", "26.05.5")
    older = at_release(tmp_path, "older.yaml", "24.11.5")
    done = cli("plan", older, "--against", newer)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "slurm.version: 24.11.5 is older than the Slurm the cluster runs (26.05.5)" in done.stdout
    )
    assert "the change of Slurm's release is refused" in done.stderr


def test_the_settings_an_older_slurmd_meets_before_its_refresh_are_named(tmp_path: Path) -> None:
    """24.11.5 -> 26.05.5 in two deploys (docs/slurm-versions.md): the head first, its pools
    pinned, whose slurm.conf is still 24.11's (nothing to warn of); then the pools, whose new
    slurm.conf has what only 26.05 reads, which the nodes still on 24.11.5 meet before their
    refresh. The same from a saved plan of the first deploy."""
    before = at_release(tmp_path, "before.yaml", "24.11.5")
    head = at_release(tmp_path, "head.yaml", "26.05.5", pools="24.11.5")
    done = cli("plan", head, "--against", before, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["changes"]["slurm"] == []
    saved = tmp_path / "head.json"
    saved.write_text(cli("plan", head, "--json").stdout)
    pools = at_release(tmp_path, "pools.yaml", "26.05.5")
    for old in (head, saved):
        done = cli("plan", pools, "--against", old, "--json")
        assert done.returncode == 0, done.stderr
        warned = json.loads(done.stdout)["changes"]["slurm"]
        assert [w.split(":", 1)[0] for w in warned] == [
            "pools[0].slurm_version",
            "pools[1].slurm_version",
        ], warned
        # The GPU pools' partitions take Exclusive=NODE from 26.05 (OverSubscribe=EXCLUSIVE
        # before); HealthCheckTimeout and Slurm's own metrics are 26.05's and 25.11's.
        for key in ("HealthCheckTimeout", "MetricsType", "Exclusive=NODE"):
            assert key in warned[0], warned[0]
        assert "run 24.11.5 until the refresh" in warned[0]
        assert "set slurm.upgrade_from to 24.11.5" in warned[0]
    # As the warning says: slurm.conf stays 24.11's for the refresh; nothing to warn of.
    kept = changed(
        tmp_path,
        "kept.yaml",
        lambda d: d.setdefault("slurm", {}).update(version="26.05.5", upgrade_from="24.11.5"),
    )
    done = cli("plan", kept, "--against", head, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["changes"]["slurm"] == []
