"""diag: the bundle holds the versions, slurm.conf, node.json, what Slurm says of the node, the
agent's state and its logs' tails, records what failed, and never takes a secret."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path

from slurmstack.contract import (
    HEALTH_DIR,
    LOG_SHIPPER_STATE_PATH,
    NODE_CONFIG_PATH,
    NODE_ENV_PATH,
    SLURM_CONF_PATH,
    SLURMD_LOG_PATH,
    NodeEnv,
    dump_document,
)
from slurmstack.node.context import Context
from slurmstack.node.observe import diag
from slurmstack.render.node import node_config
from support.examples import example_plan

PLAN = example_plan("p5-training")


def fake_run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    command = cmd[cmd.index("timeout") + 4 :] if cmd[0] == "timeout" else cmd
    if command[0] == "nvidia-smi":
        return subprocess.CompletedProcess(cmd, 127, "", "nvidia-smi: not found")
    return subprocess.CompletedProcess(cmd, 0, f"out of {' '.join(command)}\n", "")


def test_the_bundle_holds_what_a_report_needs_and_no_secret(tmp_path: Path) -> None:
    imds = {"instance-id": "i-0abc"}
    ctx = Context(root=tmp_path, run=fake_run, imds=imds.__getitem__, clock=lambda: 1_750_000_000.0)
    files = {
        NODE_CONFIG_PATH: dump_document(node_config(PLAN, PLAN.pools[0])),
        SLURM_CONF_PATH: "ClusterName=llm-train\n",
        SLURMD_LOG_PATH: "x" * (diag.LOG_TAIL_BYTES + 100) + "last line\n",
        LOG_SHIPPER_STATE_PATH: "{}",
        NODE_ENV_PATH: NodeEnv(instance_id="i-0abc", node_name="train-5").text(),
        f"{HEALTH_DIR}/kmsg-seq": "42",
        "/etc/munge/munge.key": "SECRET",
    }
    for node_path, text in files.items():
        ctx.path(node_path).parent.mkdir(parents=True, exist_ok=True)
        ctx.path(node_path).write_text(text)
    name, data = diag.bundle(ctx)
    assert name == "slurmstack-diag-llm-train-i-0abc-20250615T150640Z"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    assert members[f"{name}/files{SLURM_CONF_PATH}"] == b"ClusterName=llm-train\n"
    assert f"{name}/files{NODE_CONFIG_PATH}" in members
    assert f"{name}/files{HEALTH_DIR}/kmsg-seq" in members
    slurmd = members[f"{name}/files{SLURMD_LOG_PATH}"]
    assert len(slurmd) == diag.LOG_TAIL_BYTES and slurmd.endswith(b"last line\n")
    assert (
        members[f"{name}/commands/scontrol-show-node.txt"] == b"out of scontrol show node train-5\n"
    )
    assert b"SECRET" not in b"".join(members.values())
    index = json.loads(members[f"{name}/index.json"])
    assert index["commands"]["nvidia-smi"] == 127 and index["commands"]["sinfo --version"] == 0
    assert b"nvidia-smi: not found" in members[f"{name}/commands/nvidia-smi.txt"]


def test_the_agent_writes_the_bundle_with_diag(tmp_path: Path, capsys) -> None:
    import argparse

    from slurmstack.node.commands import COMMANDS

    (command,) = [c for c in COMMANDS if c.name.value == "diag"]
    ctx = Context(root=tmp_path, run=fake_run, imds={"instance-id": "i-0abc"}.__getitem__)
    ctx.path(NODE_CONFIG_PATH).parent.mkdir(parents=True)
    ctx.path(NODE_CONFIG_PATH).write_text(dump_document(node_config(PLAN, None)))
    assert command.run(ctx, argparse.Namespace(out="/var/tmp")) == 0
    written = Path(capsys.readouterr().out.strip())
    assert written.parent == tmp_path / "var/tmp" and written.name.endswith(".tar.gz")
    with tarfile.open(written) as tar:
        assert any(m.name.endswith("/commands/squeue.txt") for m in tar.getmembers())  # the head's
