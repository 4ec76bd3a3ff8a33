"""The exporters and servers the monitoring units run are baked into the node images, pinned
like everything else (image_pins.json): node_exporter on every image, Prometheus and
Alertmanager on images the head may boot, dcgm-exporter built from its pinned commit on NVIDIA
images; the bake disables the packages' own units and its test phase checks the programs."""

from __future__ import annotations

import re
import shlex

import pytest

from slurmstack.image_pins import image_pins
from slurmstack.plan import image_plans
from slurmstack.render import image as build
from slurmstack.render.monitoring import ALERTMANAGER, NODE_EXPORTER, PROMETHEUS
from support.examples import example_plan


def settings(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key] = " ".join(shlex.split(value))
    return out


@pytest.mark.parametrize("stem", ["p5-training", "cpu-hpc", "trainium"])
def test_every_image_bakes_the_exporters_its_roles_run(stem: str) -> None:
    plan = example_plan(stem)
    for image in image_plans(plan):
        assert "prometheus-node-exporter" in image.packages, image.key
        head = "head" in image.roles or image.kind.value == "cpu"
        for package in ("prometheus", "prometheus-alertmanager"):
            assert (package in image.packages) is head, (image.key, package)
        env = settings(build.build_env(image))
        nvidia = image.kind.value == "nvidia"
        exporter = image_pins()["dcgm_exporter"]
        assert (env["DCGM_EXPORTER_VERSION"] == exporter["version"]) is nvidia
        assert (env["DCGM_EXPORTER_COMMIT"] == exporter["git"]["commit"]) is nvidia
        if not nvidia:
            assert env["DCGM_EXPORTER_REPOSITORY"] == env["DCGM_EXPORTER_COMMIT"] == ""


def test_the_dcgm_exporter_pin_is_a_commit_of_its_tag() -> None:
    exporter = image_pins()["dcgm_exporter"]
    assert re.fullmatch(r"[0-9a-f]{40}", exporter["git"]["commit"])
    assert exporter["git"]["tag"].endswith("-" + exporter["version"])
    assert re.fullmatch(r"go1\.\d+\.\d+", exporter["go_toolchain"])


def test_the_bake_disables_the_packages_units_builds_and_checks_the_programs() -> None:
    script = build.build_script()
    for unit in ("prometheus.service", "prometheus-node-exporter.service",
                 "prometheus-alertmanager.service"):  # fmt: skip
        assert unit in script.split("units_off() {", 1)[1].split("\n}\n", 1)[0], unit
    assert "\n    install_dcgm_exporter\n" in script.split('case "$COMMAND" in', 1)[1]
    assert 'git_checkout dcgm-exporter "$DCGM_EXPORTER_REPOSITORY"' in script
    assert "check node-exporter prometheus-node-exporter --version" in script
    # The units run what the packages install (Debian's and Ubuntu's paths).
    assert NODE_EXPORTER == "/usr/bin/prometheus-node-exporter"
    assert (PROMETHEUS, ALERTMANAGER) == ("/usr/bin/prometheus", "/usr/bin/prometheus-alertmanager")
