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


@pytest.mark.parametrize("stem", ["p5-training", "cpu-hpc", "trainium"])
def test_grafana_is_baked_only_where_the_head_may_boot_at_its_pinned_version(stem: str) -> None:
    grafana = image_pins()["grafana"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", grafana["version"])
    assert grafana["repository"].startswith("https://") and grafana["key_url"].startswith(
        "https://"
    )
    plan = example_plan(stem)
    for image in image_plans(plan):
        env = settings(build.build_env(image))
        assert (env["GRAFANA_VERSION"] == grafana["version"]) is image.serves_head, image.key
        assert bool(env["GRAFANA_REPOSITORY"]) is image.serves_head
    # The image the head boots carries it.
    assert [i for i in image_plans(plan) if i.serves_head], stem


def test_the_bakes_grafana_section_pins_holds_disables_and_checks_it() -> None:
    script = build.build_script()
    section = script.split("install_grafana() {", 1)[1].split("\n}\n", 1)[0]
    assert '"grafana=$GRAFANA_VERSION"' in section  # exactly the pinned version
    assert "hold grafana" in section
    assert 'rm -f "$GRAFANA_LIST"' in section  # no third-party source left on a node
    assert "not the pinned $GRAFANA_KEY_FINGERPRINT; refused" in section
    assert "grafana-server.service" in script.split("units_off() {", 1)[1].split("\n}\n", 1)[0]
    order = script.split('case "$COMMAND" in', 1)[1]
    assert order.index("install_grafana") < order.index("units_off")  # its unit goes off too
    assert "check grafana grafana_version" in script and "check grafana-held held grafana" in script
    assert "grafana_key: $grafana_key" in script  # the manifest records the key trusted
    # The head's unit runs what the package installs.
    from slurmstack.render.monitoring import GRAFANA_HOME, GRAFANA_USER

    assert (GRAFANA_HOME, GRAFANA_USER) == ("/usr/share/grafana", "grafana")
    assert "/usr/share/grafana/bin/grafana --version" in script
