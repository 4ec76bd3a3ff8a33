"""The virtual cluster's harness, piece by piece, without booting anything (no root needed):
what it runs of a node's user data, the slurm.conf it stores, how its systemctl reads unit
commands, and how its metadata service answers."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from slurmstack import render
from slurmstack.contract import UNPLACED_TOPOLOGY
from slurmstack.loader import load_file
from slurmstack.plan import build_plan
from slurmstack.plan.topology import plan_topology
from support.examples import EXAMPLE_IDS, example_plan
from vcluster.conftest import DEFINITION
from vcluster.harness import cloudinit, standins
from vcluster.harness.imds import Instance, MetadataService
from vcluster.harness.node_side import systemctl

STEP_DIRS = {step: f"/run-dir/{step}" for step in standins.REPLACED_STEPS.values()}


def vcluster_plan():  # type: ignore[no-untyped-def]
    loaded = load_file(DEFINITION)
    assert loaded.spec is not None, loaded.findings
    return build_plan(loaded.spec)


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_runcmd_runs_every_step_as_rendered_but_the_named_hardware_ones(example: str) -> None:
    """Each entry becomes one line of the script, as written; a replaced step keeps its
    runner (`slurmstack-bootstrap run`) and only the command it runs is the stand-in."""
    plan = example_plan(example)
    for role in render.roles(plan):
        user_data = cloudinit.parse(render.user_data(plan, role))
        lines = user_data.script(STEP_DIRS).splitlines()
        assert lines[:2] == ["#!/bin/sh", "set -eu"]
        assert len(lines) == len(user_data.runcmd) + 1
        for entry, line in zip(user_data.runcmd, lines[1:], strict=True):
            step = cloudinit.replaced_step(entry) if isinstance(entry, tuple) else None
            if isinstance(entry, str):
                assert line == entry
            elif entry[:2] == standins.CONTRACT_STEP:
                kept = [w for w in entry if w not in standins.ABSENT_FROM_THIS_MACHINE]
                assert shlex.split(line) == kept and len(kept) > 2
            elif step is None:
                assert shlex.split(line) == list(entry)
            else:
                assert entry[:2] == ("slurmstack-bootstrap", "run")
                assert shlex.split(line) == [
                    *entry[:2], "/usr/bin/python3", standins.STEP, step, STEP_DIRS[step]
                ]  # fmt: skip
        assert user_data.files  # and nothing installed at boot: no packages step
        assert not any(isinstance(e, tuple) and e[1:2] == ("packages",) for e in user_data.runcmd)


def test_the_virtual_clusters_definition_meets_every_hardware_stand_in() -> None:
    """The two-pool definition exercises each replaced step: the head node's state volume,
    the GPU pool's NVMe scratch, and shared file systems everywhere."""
    plan = vcluster_plan()
    replaced = {
        role: set(cloudinit.parse(render.user_data(plan, role)).replaced())
        for role in render.roles(plan)
    }
    assert replaced == {
        "head": {"state-volume", "mounts"},
        "gpu": {"scratch", "mounts"},
        "cpu": {"mounts"},
    }
    assert plan.pool("gpu").expected_gpus == 4 and plan.pool("gpu").expected_efa_devices == 1


def test_the_stored_slurm_conf_changes_only_the_named_keys() -> None:
    rendered = render.slurm_conf(vcluster_plan())
    patched = standins.patch_slurm_conf(rendered).splitlines()
    original = rendered.splitlines()
    for before, after in zip(original, patched, strict=False):
        key = before.split("=", 1)[0]
        if key in standins.SLURM_CONF_OVERRIDES:
            assert after == f"{key}={standins.SLURM_CONF_OVERRIDES[key]}"
        else:
            assert after == before
    assert patched[-len(standins.SLURM_CONF_ADDITIONS) :] == list(standins.SLURM_CONF_ADDITIONS)
    with pytest.raises(ValueError, match="SlurmdTimeout"):
        standins.patch_slurm_conf(rendered.replace("SlurmdTimeout=", "# was SlurmdTimeout "))


def test_every_stand_in_says_what_it_replaces_and_why_and_the_docs_list_it() -> None:
    import docs

    names = [s.name for s in standins.STAND_INS]
    assert len(names) == len(set(names))
    for stand_in in standins.STAND_INS:
        assert stand_in.replaces and stand_in.why and stand_in.instead, stand_in.name
    page = (docs.REPO / "docs/contributing/stand-ins.md").read_text()
    assert page == docs.stand_ins_page(), docs.COMMAND
    for stand_in in standins.STAND_INS:
        assert f"| `{stand_in.name}` | {stand_in.replaces} |" in page


def test_systemctl_reads_the_rendered_slurmd_unit_as_systemd_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = vcluster_plan()
    pool = plan.pool("gpu")
    unit = render.pool_files(plan, pool)[render.SLURMD_UNIT_PATH]
    # node.env as `slurmstack-node params` writes it, where this test can put it.
    env_file = tmp_path / "node.env"
    env_file.write_text("SLURMSTACK_HEAD_ADDRESS=10.99.0.4\nSLURMSTACK_NODE_NAME=gpu-6\n")
    unit = unit.replace("EnvironmentFile=/etc/slurmstack/node.env", f"EnvironmentFile={env_file}")
    (tmp_path / "slurmstack-slurmd.service").write_text(unit)
    monkeypatch.setattr(systemctl, "UNIT_DIRS", (str(tmp_path),))
    loaded = systemctl.load("slurmstack-slurmd.service")
    env = systemctl.environment(loaded)
    words, ignore = systemctl.command(systemctl.first(loaded, "Service.ExecStart"), env)
    assert not ignore
    # With topology/tree (slurm.version 25.05 or later) the node joins under the unplaced leaf.
    topology = f" Topology={UNPLACED_TOPOLOGY}" if plan_topology(plan).tree else ""
    assert words == [
        "/usr/sbin/slurmd", "-D", "-s", "-Z", "--conf-server", "10.99.0.4:6817",
        "-N", "gpu-6", "--conf", pool.dynamic_node_conf + topology,
    ]  # fmt: skip
    assert loaded["Service.ExecStartPre"] == [
        "/usr/local/bin/slurmstack-node head-address",
        "/usr/local/bin/slurmstack-node scratch",
        "/usr/local/bin/slurmstack-node job-dirs",
        "/usr/local/bin/slurmstack-node health",
    ]
    # A word that is only an unset variable disappears (munge.service: munged $OPTIONS).
    assert systemctl.command("/usr/sbin/munged $OPTIONS", {})[0] == ["/usr/sbin/munged"]
    assert systemctl.command("-/bin/true ${X}y", {"X": "x"}) == (["/bin/true", "xy"], True)


def test_systemctl_reads_environment_files_again_for_exec_start_and_follows_required_by(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As systemd: ExecStart sees what an ExecStartPre step wrote to an EnvironmentFile (the
    slurmd unit's head-address step), and a unit enabled with RequiredBy=X starts before X
    (the metadata firewall before munge and Slurm)."""
    units, out, env_file = tmp_path / "units", tmp_path / "out", tmp_path / "env"
    units.mkdir()
    (units / "guard.service").write_text(
        f"[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'echo guard >> {out}'\n"
        "[Install]\nRequiredBy=app.service\n"
    )
    (units / "app.service").write_text(
        f"[Service]\nType=oneshot\nEnvironmentFile={env_file}\n"
        f"ExecStartPre=/bin/sh -c 'echo VALUE=fresh > {env_file}'\n"
        f"ExecStart=/bin/sh -c 'echo app ${{VALUE}} >> {out}'\n"
    )
    env_file.write_text("VALUE=stale\n")
    monkeypatch.setattr(systemctl, "UNIT_DIRS", (str(units),))
    monkeypatch.setattr(systemctl, "STATE", str(tmp_path / "state"))
    monkeypatch.setattr(systemctl, "LOGS", str(tmp_path / "logs"))
    systemctl.enable("guard.service")
    assert (units / "app.service.requires" / "guard.service").is_symlink()
    assert systemctl.enabled_state("guard.service") == "enabled"
    systemctl.start("app.service")
    assert out.read_text() == "guard\napp fresh\n"
    assert systemctl.is_active("guard.service") and not systemctl.is_active("app.service")


def test_metadata_service_needs_a_token_and_answers_each_node_by_address() -> None:
    service = MetadataService()
    service.register(Instance("i-0abc", "10.99.0.5", "c7i.2xlarge", "us-east-1a", "#cloud-config"))
    assert service.answer("10.99.0.5", "/latest/meta-data/instance-id", None)[0] == 401
    token = service.new_token()
    assert service.answer("10.99.0.5", "/latest/meta-data/instance-id", token) == (200, "i-0abc")
    assert service.answer("10.99.0.5", "/latest/meta-data/local-ipv4", token) == (200, "10.99.0.5")
    assert service.answer("10.99.0.5", "/latest/user-data", token) == (200, "#cloud-config")
    assert service.answer("10.99.0.6", "/latest/meta-data/instance-id", token)[0] == 404
    service.unregister("10.99.0.5")
    assert service.answer("10.99.0.5", "/latest/meta-data/instance-id", token)[0] == 404
