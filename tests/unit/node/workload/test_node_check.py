"""The node check, on fake node trees: what nvidia-smi and fi_info answer, what is mounted, and
the NCCL/libfabric environment the task got, against its pool's acceptance.json."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from slurmstack.contract import ACCEPTANCE_PATH
from slurmstack.node.context import AgentError, Context
from slurmstack.node.workload import node_check
from slurmstack.plan.workload import acceptance
from slurmstack.render import role_files
from support.examples import example_plan

pytestmark = pytest.mark.workload

PLAN = example_plan("p5-training")
EFA_DATA = Path(__file__).resolve().parent / "data" / "efa"


def fi_info(domains: int) -> str:
    entry = "provider: efa\n    fabric: efa\n    domain: rdmap{i}s0-rdm\n    version: 122.0\n    type: FI_EP_RDM\n    protocol: FI_PROTO_EFA\n"  # noqa: E501
    return "".join(entry.format(i=79 + i) for i in range(domains))


class Node:
    """Answers nvidia-smi and fi_info like a node with ``gpus`` and ``efa`` devices."""

    def __init__(self, gpus: int, efa: int) -> None:
        self.gpus, self.efa = gpus, efa
        self.calls: list[list[str]] = []

    def __call__(self, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        self.calls.append(cmd)
        name = Path(cmd[0]).name
        if name == "nvidia-smi" and cmd[1] == "topo":
            return subprocess.CompletedProcess(cmd, 0, "\tGPU0\tGPU1\nGPU0\t X \tNV18\n", "")
        if name == "nvidia-smi":
            rows = "".join(
                f"{i}, NVIDIA H100 80GB HBM3, 00000000:{53 + i:02X}:00.0\n"
                for i in range(self.gpus)
            )
            return subprocess.CompletedProcess(cmd, 0, rows, "")
        if name == "fi_info":
            out = fi_info(self.efa)
            return subprocess.CompletedProcess(
                cmd, 0 if out else 61, out, "" if out else "fi_getinfo: -61 (No data available)"
            )
        raise AssertionError(cmd)


def pool_node(tmp_path: Path, pool: str, run: Node, mounts: list[str]) -> Context:
    files = role_files(PLAN, pool)
    target = tmp_path / ACCEPTANCE_PATH.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text(files[ACCEPTANCE_PATH])
    node_json = tmp_path / "etc/slurmstack/node.json"
    node_json.parent.mkdir(parents=True, exist_ok=True)
    node_json.write_text(files["/etc/slurmstack/node.json"])
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/mounts").write_text("".join(f"fs {m} lustre rw 0 0\n" for m in mounts))
    for tool, where in (("nvidia-smi", "usr/bin"), ("fi_info", "opt/amazon/efa/bin")):
        path = tmp_path / where / tool
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    return Context(root=tmp_path, run=run)


def task_env(pool: str) -> dict[str, str]:
    """The environment the TaskProlog gives a task of ``pool`` (its rendered variables)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "SLURMD_NODENAME": "train-1811"}
    env.update(dict(acceptance(PLAN).pool(pool).env))
    return env


def test_a_healthy_p5_node_passes_every_check(tmp_path: Path) -> None:
    run = Node(gpus=8, efa=32)
    ctx = pool_node(tmp_path, "train", run, ["/home", "/fsx", "/scratch"])
    pool = node_check.acceptance_of(ctx, None)  # the node's own pool, from node.json
    assert pool.pool == "train" and pool.gpus_per_node == 8 and pool.efa_devices == 32
    checks = node_check.node_check(ctx, pool, task_env("train"))
    assert [(c.name, c.ok) for c in checks] == [
        ("gpus", True), ("topology", True), ("efa", True), ("mounts", True), ("nccl-env", True)
    ]  # fmt: skip
    assert checks[2].detail == "32 EFA devices, expected 32"
    # fi_info found where the EFA installer puts it, off the task's PATH.
    assert ["/opt/amazon/efa/bin/fi_info", "-p", "efa", "-t", "FI_EP_RDM"] in run.calls
    assert "FI_PROVIDER=efa" in checks[4].output


def test_what_a_broken_node_lacks_is_named(tmp_path: Path) -> None:
    ctx = pool_node(tmp_path, "train", Node(gpus=7, efa=31), ["/home", "/scratch"])
    env = task_env("train")
    env["FI_PROVIDER"] = "tcp"
    checks = {
        c.name: c for c in node_check.node_check(ctx, node_check.acceptance_of(ctx, "train"), env)
    }
    assert checks["gpus"].detail == "7 GPUs, expected 8" and not checks["gpus"].ok
    assert checks["efa"].detail == "31 EFA devices, expected 32" and not checks["efa"].ok
    assert checks["mounts"].detail == "not mounted: /fsx"
    assert checks["nccl-env"].detail == "FI_PROVIDER=tcp (expected efa)"
    line = node_check.report("train-1811", "train", list(checks.values()), as_json=True)
    document = json.loads(line)
    assert document["ok"] is False and document["node"] == "train-1811"
    assert {c["name"] for c in document["checks"] if not c["ok"]} == {
        "gpus",
        "efa",
        "mounts",
        "nccl-env",
    }


def test_no_efa_device_at_all_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    ctx = pool_node(tmp_path, "dev", Node(gpus=4, efa=0), ["/home", "/fsx", "/scratch"])
    checks = {
        c.name: c
        for c in node_check.node_check(ctx, node_check.acceptance_of(ctx, "dev"), task_env("dev"))
    }
    assert not checks["efa"].ok and "fi_getinfo: -61" in checks["efa"].detail


def test_a_pool_that_is_not_there_is_named(tmp_path: Path) -> None:
    ctx = pool_node(tmp_path, "train", Node(8, 32), [])
    with pytest.raises(
        AgentError, match=r"no pool 'nope' in .*acceptance.json: one of \['train'\]"
    ):
        node_check.acceptance_of(ctx, "nope")
    os.remove(tmp_path / ACCEPTANCE_PATH.lstrip("/"))
    with pytest.raises(AgentError, match=r"acceptance\.json is missing"):
        node_check.acceptance_of(ctx, "train")


class RecordedFiInfo(Node):
    """A node whose fi_info prints a recorded ``fi_info -p efa`` (data/efa), filtered by
    ``-t`` as fi_info filters: the entries whose endpoint type matches."""

    def __init__(self, gpus: int, recorded: str) -> None:
        super().__init__(gpus, 0)
        self.recorded = recorded

    def __call__(self, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        if Path(cmd[0]).name != "fi_info":
            return super().__call__(cmd, check)
        self.calls.append(cmd)
        wanted = cmd[cmd.index("-t") + 1] if "-t" in cmd else None
        entries = re.split(r"(?m)^(?=provider: )", (EFA_DATA / self.recorded).read_text())
        kept = [e for e in entries if e and (wanted is None or f"type: {wanted}\n" in e)]
        return subprocess.CompletedProcess(cmd, 0, "".join(kept), "")


def test_a_device_listed_more_than_once_is_counted_once(tmp_path: Path) -> None:
    """libfabric lists one EFA device as the core provider's RDM endpoint and, layered, as
    efa;ofi_rxd over its DGRAM domain (ofiwg/libfabric#5689): one device, not two."""
    run = RecordedFiInfo(4, "libfabric-1.9-efa-and-rxd.txt")
    ctx = pool_node(tmp_path, "dev", run, ["/home", "/fsx", "/scratch"])
    (efa,) = [
        c
        for c in node_check.node_check(ctx, node_check.acceptance_of(ctx, "dev"), task_env("dev"))
        if c.name == "efa"
    ]
    assert efa.output.count("domain:") == 2  # what fi_info -t FI_EP_RDM printed
    assert (efa.ok, efa.detail) == (True, "1 EFA devices, expected 1")


def test_devices_are_named_without_their_endpoint_suffix() -> None:
    listing = (EFA_DATA / "libfabric-1.9-efa-and-rxd.txt").read_text()
    assert node_check.efa_devices(listing) == {"efa_0"}
    assert node_check.efa_devices(fi_info(3)) == {"rdmap79s0", "rdmap80s0", "rdmap81s0"}
