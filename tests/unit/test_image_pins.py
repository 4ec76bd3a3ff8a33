"""Every download a node image bakes carries a pin the bake can check (slurmstack.image_pins):
the shipped pins do; an unpinned one is a finding of `validate` and a refusal of the program's
preflight, before any resource is made, never a failure on the build instance."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from slurmstack import image_pins
from slurmstack.render import image as build
from slurmstack.stack.preflight import preflight
from support.checks import definition, findings
from support.stack import plan_of


def test_every_download_of_the_shipped_pins_is_pinned() -> None:
    assert image_pins.pin_problems() == []
    pins = image_pins.image_pins()
    # The two that shipped with a null sha256: now built from a git commit of their tag.
    for name in ("enroot", "efs_utils"):
        git = pins[name]["git"]
        assert re.fullmatch(r"[0-9a-f]{40}", git["commit"]), name
        assert git["tag"] == f"v{pins[name]['version']}"
        assert git["repository"].startswith("https://github.com/")
        assert "sha256" not in pins[name] and "debs" not in pins[name]


def unpinned(mutate: Any) -> dict[str, Any]:
    pins = copy.deepcopy(image_pins.image_pins())
    mutate(pins)
    return pins


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda p: p["efs_utils"]["git"].update(commit=None),
            "efs_utils.git.commit: None is not a 40-digit git commit",
        ),
        (
            lambda p: p["enroot"]["git"].update(commit="c7dc4a6"),
            "enroot.git.commit: 'c7dc4a6' is not a 40-digit git commit",
        ),
        (
            lambda p: p["pyxis"].update(sha256=None),
            "pyxis.sha256: None is not a sha256 for https://github.com/NVIDIA/pyxis/",
        ),
        (
            lambda p: p["nccl_tests"].pop("sha256"),
            "nccl_tests.sha256: None is not a sha256",
        ),
        (
            lambda p: p["enroot"]["git"].update(repository="http://example.invalid/enroot"),
            "enroot.git.repository: 'http://example.invalid/enroot' is not an https://",
        ),
    ],
)
def test_an_unpinned_download_is_named(mutate: Any, expected: str) -> None:
    problems = image_pins.pin_problems(unpinned(mutate))
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_a_new_download_without_a_pin_is_caught_wherever_it_is() -> None:
    """The walk covers every object: a download added later (a new section, a list entry) is
    held to the same rule without a change here."""
    pins = unpinned(
        lambda p: p.setdefault("extra", {"debs": [{"url": "https://example.invalid/x.deb"}]})
    )
    assert image_pins.pin_problems(pins) == [
        "extra.debs[0].sha256: None is not a sha256 for https://example.invalid/x.deb; record "
        "the file's sha256 (from a signed index or your own download), or build from a git "
        "commit instead"
    ]


@pytest.fixture
def null_efs_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    pins = unpinned(lambda p: p["efs_utils"]["git"].update(commit=None))
    monkeypatch.setattr(image_pins, "image_pins", lambda: pins)


@pytest.mark.usefixtures("null_efs_pin")
def test_validate_reports_an_unpinned_download() -> None:
    (finding,) = [f for f in findings(definition()) if f.rule == "image-downloads-pinned"]
    assert finding.path == "image" and finding.level.value == "error"
    assert "efs_utils.git.commit: None is not a 40-digit git commit" in finding.message
    # Nothing baked (every node brings its own AMI): nothing to refuse.
    own = definition()
    own["image"] = {"ami": "ami-0123456789abcdef0"}
    assert not [f for f in findings(own) if f.rule == "image-downloads-pinned"]


def test_the_program_preflight_refuses_an_unpinned_download(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = plan_of(definition())
    assert preflight(plan, None) == []
    pins = unpinned(lambda p: p["efs_utils"]["git"].update(commit=None))
    monkeypatch.setattr(image_pins, "image_pins", lambda: pins)
    (problem,) = preflight(plan, None)
    assert problem.startswith("image: unpinned download in image_pins.json: efs_utils.git.commit")


def test_the_build_settings_carry_each_git_pin() -> None:
    from slurmstack.plan import image_plans

    settings = build.build_env(image_plans(plan_of(definition()))[0])
    pins = image_pins.image_pins()
    for prefix, name in (("ENROOT", "enroot"), ("EFS_UTILS", "efs_utils")):
        git = pins[name]["git"]
        assert f"{prefix}_REPOSITORY='{git['repository']}'" in settings
        assert f"{prefix}_TAG='{git['tag']}'" in settings
        assert f"{prefix}_COMMIT='{git['commit']}'" in settings
    # What efs-utils' INSTALL.md asks to build with, and enroot's 'From source', are installed.
    tools = set(re.search(r"^BUILD_PACKAGES='([^']*)'$", settings, re.M)[1].split())  # type: ignore[index]
    assert set(pins["efs_utils"]["build_packages"]) <= tools
    assert {"gettext", "perl", "golang-go", "cmake", "cargo", "rustc", "g++"} <= tools
    assert {"libtool", "automake", "libmd-dev"} <= tools


def test_mountpoint_is_pinned_by_release_commit_and_signing_key() -> None:
    """Mountpoint for S3's pin: the release tag's commit (read in a clone) and the fingerprint
    of the key its package must be signed by; a null fingerprint is a finding."""
    from slurmstack.image_pins import pin_problems

    pin = image_pins.image_pins()["mountpoint_s3"]
    assert pin["git"]["commit"] == "4f38ff8b6ef0bdee9cc6f9852a6cc8de0041439b"
    assert all(pin["version"] in url for url in pin["package"].values())
    assert pin_problems() == []
    broken = unpinned(lambda p: p["mountpoint_s3"]["signing_key"].update(fingerprint=None))
    assert pin_problems(broken) == [
        "mountpoint_s3.signing_key.fingerprint: None is not a 40-digit key fingerprint; record "
        "the fingerprint the publisher lists for its release key (a package is installed only "
        "when its signature verifies by that key)"
    ]


def test_build_sh_installs_mountpoint_in_its_own_function_only_when_signed() -> None:
    from slurmstack.plan import image_plans
    from slurmstack.render.image import build_env, build_script
    from support.examples import example_plan

    script = build_script()
    body = script[script.index("install_mountpoint_s3() {") :]
    body = body[: body.index("\n}\n")]
    assert "VALIDSIG $MOUNTPOINT_S3_FINGERPRINT" in body and "latest" not in body
    assert "install_mountpoint_s3\n" in script.split('case "$COMMAND" in', 1)[1]
    plan = example_plan("p5-training")
    settings = build_env(image_plans(plan)[0])
    assert "MOUNTPOINT_S3_URL='https://s3.amazonaws.com/mountpoint-s3-release/1.23.0/" in settings
    assert "MOUNTPOINT_S3_FINGERPRINT='8AEFE705EBE329C0948C75A66F1C3B3AEF4B030B'" in settings


def test_cpu_images_take_the_efa_installers_fabric_not_ubuntus() -> None:
    """CPU pools with EFA run the same stack as GPU nodes: the EFA installer's libfabric and
    Open MPI in /opt/amazon, pinned by sha256 (ParallelCluster's recorded checksum), not
    Ubuntu's libfabric1 and Open MPI (which conflict with it); the MPI job uses that MPI; GPU
    images keep the Deep Learning AMI's own installer."""
    from slurmstack.plan import ImageKind, image_plans
    from support.examples import example_plan

    pins = image_pins.image_pins()["efa_installer"]
    assert re.fullmatch(r"[0-9a-f]{64}", pins["sha256"])
    assert pins["url"].endswith(f"aws-efa-installer-{pins['version']}.tar.gz")
    plan = example_plan("cpu-hpc")
    (cpu,) = [i for i in image_plans(plan) if i.kind is ImageKind.CPU]
    settings = build.build_env(cpu)
    assert f"EFA_INSTALLER_VERSION='{pins['version']}'" in settings
    assert f"EFA_INSTALLER_SHA256='{pins['sha256']}'" in settings
    assert not {"libfabric1", "openmpi-bin", "libopenmpi-dev", "rdma-core"} & set(cpu.packages)
    assert "gcc" in cpu.packages  # what the installer's mpicc drives
    assert ("EFA installer", pins["version"]) == (
        cpu.baked()[-1][0],
        cpu.baked()[-1][1].split()[0],
    )
    from slurmstack.plan.workload import acceptance

    for pool in acceptance(plan).pools:
        assert pool.mpi_bin == "/opt/amazon/openmpi/bin", pool.pool
    gpu = example_plan("p5-training")
    for image in image_plans(gpu):
        if image.kind is not ImageKind.CPU:
            assert "EFA_INSTALLER_VERSION=''" in build.build_env(image)
