"""The Slurm version of record, its pinned sources, SchedMD's upgrade window, and what `plan`
says about them (slurmstack.slurm_releases, report.slurm, checks.slurm's upgrade findings)."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from typer.testing import CliRunner

from slurmstack import slurm_releases as releases
from slurmstack.checks.slurm import slurm_upgrade_findings
from slurmstack.cli import app
from slurmstack.plan import build_plan, image_plans
from slurmstack.render.image import build_env
from slurmstack.report.slurm import order, upgrade_section
from slurmstack.slurm_releases import controller_accepts
from slurmstack.spec import ClusterSpec
from slurmstack.validate import validate_object
from support.examples import REPO, example_plan


def test_one_version_of_record_everywhere() -> None:
    """The spec's default, the pins and every image's settings name the same Slurm; no other
    Slurm version is pinned for the images."""
    record = releases.version_of_record()
    assert record == "26.05.5"
    assert ClusterSpec.model_fields["slurm"].default_factory().version == record  # type: ignore[misc]
    pinned = releases.source(record)
    assert pinned is not None and pinned.tag == "slurm-26-05-5-1"
    assert re.fullmatch(r"[0-9a-f]{64}", pinned.sha256)
    plan = example_plan("p5-training")
    for image in image_plans(plan):
        settings = build_env(image)
        assert f"SLURM_VERSION='{record}'" in settings
        assert f"SLURM_SHA256='{pinned.sha256}'" in settings
        assert "SLURM_PACKAGE_VERSION" not in settings
        assert ("SLURM_NVML='yes'" in settings) == (image.kind.value == "nvidia")
    # Every pinned source is SchedMD's tag archive of its version, with a recorded provenance.
    for version, source in releases.sources().items():
        assert source.tag == "slurm-" + version.replace(".", "-") + "-1"
        assert source.url.endswith(f"/archive/refs/tags/{source.tag}.tar.gz")
        assert "Sources" in source.provenance and source.size > 1_000_000


def test_sackd_comes_from_the_slurm_build_alone() -> None:
    """One rule for sackd: the image's Slurm build installs it (with every daemon), so no apt
    list names it (Debian 12 and Ubuntu 24.04's 23.11 packages differ there, and neither is the
    pinned release), and every image's contract checks the built one."""
    plan = example_plan("p5-training")
    for image in image_plans(plan):
        settings = build_env(image)
        (apt,) = re.findall(r"^APT_PACKAGES='([^']*)'$", settings, re.M)
        (held,) = re.findall(r"^HELD_PACKAGES='([^']*)'$", settings, re.M)
        assert "sackd" not in apt.split() and "sackd" not in held.split()
        (contract,) = re.findall(r"^CONTRACT='([^']*)'$", settings, re.M)
        assert "cmd:sackd" in contract.split()


@pytest.mark.parametrize(
    ("old", "new", "hops"),
    [
        ("26.05.5", "26.05.5", ()),
        ("26.05.3", "26.05.5", ()),  # a patch release
        ("24.11.5", "26.05.5", ("26.05",)),  # three lines back: still one step
        # Through a pinned line where one accepts the start (24.11.5 is pinned).
        ("24.05.8", "26.05.5", ("24.11", "26.05")),
        ("23.11.4", "26.05.5", ("24.11", "26.05")),
        ("22.05.8", "26.05.5", ("23.11", "24.11", "26.05")),
        ("26.05.5", "24.11.5", None),  # backwards
    ],
)
def test_upgrade_hops_follow_the_compatibility_window(
    old: str, new: str, hops: tuple[str, ...] | None
) -> None:
    assert releases.upgrade_hops(old, new) == hops


def test_an_upgrade_past_the_window_is_refused_naming_the_release_between() -> None:
    (finding,) = slurm_upgrade_findings("23.11.4", "26.05.5")
    assert finding.path == "slurm.version"
    assert "accepts the state of 25.11, 25.05, 24.11 only" in finding.message
    assert "upgrade through 24.11 first: set slurm.version to Slurm 24.11.5" in finding.message
    (back,) = slurm_upgrade_findings("26.05.5", "24.11.5")
    assert "cannot go back" in back.message
    assert slurm_upgrade_findings("24.11.5", "26.05.5") == []
    assert slurm_upgrade_findings("26.05.5", "26.05.5") == []


def test_upgrade_section_lists_slurms_order_and_what_pauses() -> None:
    plan = example_plan("p5-training")  # accounting on: slurmdbd first
    up = upgrade_section(plan, "24.11.5")
    assert up["kind"] == "upgrade" and up["through"] == []
    assert [s["daemon"] for s in up["steps"]] == ["slurmdbd", "slurmctld", "slurmd"]
    assert "no job starts" in up["steps"][1]["paused"]
    refused = upgrade_section(plan, "23.11.4")
    assert refused["kind"] == "refused" and refused["through"] == ["24.11"]
    assert upgrade_section(plan, "26.05.5")["kind"] == "none"


def test_login_pools_come_last_in_the_upgrade_on_the_heads_release() -> None:
    data = yaml.safe_load((REPO / "examples" / "p5-training.yaml").read_text())
    data["groups"] = [{"name": "research", "gid": 3000}]
    data["users"] = [{"name": "alice", "uid": 2001, "group": "research"}]
    data["login_pools"] = [{"name": "login", "instance_type": "m7i.2xlarge", "count": 1}]
    result = validate_object(data, source="test")
    assert result.spec is not None, [f.line() for f in result.findings]
    plan = build_plan(result.spec)
    steps = upgrade_section(plan, "24.11.5")["steps"]
    assert [s["where"] for s in steps] == ["head node", "head node", "every pool", "login pools"]
    last = order(plan)[-1]
    assert (last["where"], last["daemons"], last["version"]) == (
        "login pool login",
        ["sackd"],
        "26.05.5",
    )
    (image,) = [i for i in image_plans(plan) if "login/login" in i.roles]
    assert image.slurm.version == "26.05.5" and not image.lags


def test_plan_json_and_table_show_the_slurm_version() -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["plan", "examples/p5-training.yaml", "--json"])
    assert out.exit_code == 0, out.output
    slurm = json.loads(out.stdout)["slurm"]
    assert slurm["version"] == "26.05.5" and slurm["release_line"] == "26.05"
    assert slurm["source"]["tag"] == "slurm-26-05-5-1"
    assert slurm["upgrades_directly_from"] == ["25.11", "25.05", "24.11"]
    assert slurm["upgrades_through"]["23.11"] == ["24.11"]
    assert [s["daemon"] for s in slurm["upgrade_steps"]] == ["slurmdbd", "slurmctld", "slurmd"]
    table = runner.invoke(app, ["plan", "examples/p5-training.yaml"])
    assert "Slurm 26.05.5: built from slurm-26-05-5-1 in every image" in table.stdout


@pytest.mark.parametrize(
    ("controller", "node", "accepted"),
    [
        ("26.05.5", "26.05.5", True),
        ("26.05.5", "26.05.1", True),  # an older patch release of the same line
        ("26.05.5", "24.11.5", True),  # within 26.05's window
        ("24.11.5", "26.05.5", False),  # slurmd ahead of slurmctld
        ("26.05.5", "26.05.6", False),  # even by a patch release
        ("26.05.5", "23.11.4", False),  # past 26.05's window (25.11, 25.05, 24.11)
    ],
)
def test_controller_accepts(controller: str, node: str, accepted: bool) -> None:
    assert controller_accepts(controller, node) is accepted
