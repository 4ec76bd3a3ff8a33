"""A pool as acceptance sees it, simulated: a runner that answers sinfo, srun and scontrol like
Slurm on that pool would, with a fabric model behind the all-reduce (a slow node slows every
run it is in), node checks that fail where told, and scontrol refusing a non-operator."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from pathlib import Path

from slurmstack.contract import ACCEPTANCE_PATH, NCCL_TESTS_DIR
from slurmstack.node.context import Context
from slurmstack.render import role_files
from support.examples import example_plan


def nccl_output(nodes: list[str], gpus: int, busbw: float) -> str:
    """all_reduce_perf's output (nccl-tests' format) of a run whose 2 GiB bus bandwidth is
    ``busbw``: header, rank lines, three rows, the footer."""
    ranks = len(nodes) * gpus
    lines = ["# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703",
             "# Collective test starting: all_reduce_perf", "#", "# Using devices"]  # fmt: skip
    for r in range(ranks):
        lines.append(f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on {nodes[r // gpus]:>10} "
                     f"device {r % gpus:2d} [0000:53:00] NVIDIA H100 80GB HBM3")  # fmt: skip
    lines.append("#")
    factor = 2 * (ranks - 1) / ranks
    for size in (2**29, 2**30, 2**31):
        bus = busbw * (0.9 if size < 2**31 else 1.0)
        alg = bus / factor
        time = size / alg / 1e3
        lines.append(f"{size:12d}  {size // 4:12d}     float     sum      -1  {time:7.1f}  "
                     f"{alg:6.2f}  {bus:6.2f}       0  {time:7.1f}  {alg:6.2f}  {bus:6.2f}       0")  # fmt: skip
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {busbw * 0.4:g} ", "#",
              "# Collective test concluded: all_reduce_perf", ""]  # fmt: skip
    return "\n".join(lines)


def _option(cmd: list[str], name: str) -> str | None:
    for arg in cmd:
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    return None


class SlurmPool:
    """Answers the commands acceptance runs, for the nodes of ``partitions``."""

    def __init__(
        self,
        partitions: dict[str, dict[str, str]],  # partition -> node -> sinfo state
        gpus: int = 8,
        slow: set[str] = frozenset(),
        failing_check: dict[str, str] | None = None,  # node -> failed check detail
        operator: bool = True,
        completing: dict[str, int] | None = None,  # node -> sinfo reads it is still completing
        planned: dict[str, int] | None = None,  # node -> sinfo reads it is still planned
        topology: dict[str, str] | None = None,  # node -> Topology= (the head placed it)
        slow_between_leaves: bool = False,  # a run whose nodes span two leaves is slow
    ) -> None:
        self.topology = topology or {}
        self.slow_between_leaves = slow_between_leaves
        self.partitions = partitions
        self.settling = {node: ("completing", reads) for node, reads in (completing or {}).items()}
        self.settling |= {node: ("planned", reads) for node, reads in (planned or {}).items()}
        self.gpus = gpus
        self.slow = set(slow)
        self.failing_check = failing_check or {}
        self.operator = operator
        self.calls: list[list[str]] = []
        self.drained: dict[str, str] = {}
        self.lock = threading.Lock()

    def __call__(self, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        with self.lock:
            self.calls.append(cmd)
        out, err, code = self.answer(cmd)
        if check and code:
            raise subprocess.CalledProcessError(code, cmd, out, err)
        return subprocess.CompletedProcess(cmd, code, out, err)

    def answer(self, cmd: list[str]) -> tuple[str, str, int]:
        if cmd[0] == "sinfo":
            partition = cmd[cmd.index("-p") + 1]
            nodes = dict(self.partitions[partition])
            for node in set(nodes) & {n for n, (_, reads) in self.settling.items() if reads > 0}:
                state, reads = self.settling[node]
                nodes[node] = state
                self.settling[node] = (state, reads - 1)
            return "".join(f"{n} {s}\n" for n, s in nodes.items()), "", 0
        if cmd[:4] == ["scontrol", "--oneliner", "show", "node"]:
            lines = []
            for node in cmd[4].split(","):
                placed = f" Topology={self.topology[node]}" if node in self.topology else ""
                lines.append(f"NodeName={node} State=IDLE{placed}\n")
            return "".join(lines), "", 0
        if cmd[:2] == ["scontrol", "update"]:
            if not self.operator:
                return "", "slurm_update error: Invalid user id\n", 1
            node = cmd[2].removeprefix("NodeName=")
            self.drained[node] = cmd[4].removeprefix("Reason=")
            return "", "", 0
        if cmd[0] == "srun":
            nodes = (_option(cmd, "nodelist") or "").split(",")
            program = cmd[next(i for i, a in enumerate(cmd) if not a.startswith("-") and i > 0)]
            if program == f"{NCCL_TESTS_DIR}/all_reduce_perf":
                leaves = {self.topology.get(n, "").rsplit(":", 1)[-1] for n in nodes}
                spans = self.slow_between_leaves and len(leaves) > 1
                busbw = 140.73 if set(nodes) & self.slow or spans else 450.2
                return nccl_output(nodes, self.gpus, busbw), "", 0
            if program.endswith("slurmstack-node"):
                lines = []
                for node in nodes:
                    failed = self.failing_check.get(node)
                    checks = [
                        {
                            "name": "gpus",
                            "ok": failed is None,
                            "detail": failed or "8 GPUs, expected 8",
                        }
                    ]
                    lines.append(
                        json.dumps(
                            {"node": node, "pool": "p", "ok": failed is None, "checks": checks}
                        )
                    )
                return "\n".join(lines) + "\n", "", 1 if self.failing_check else 0
            if program == "/bin/sh":
                document = {"ranks": len(nodes), "hosts": [f"ip-{n}" for n in nodes], "ok": True}
                return json.dumps(document) + "\n", "", 0
        raise AssertionError(f"unexpected command {cmd}")

    def sruns(self, program_part: str) -> list[list[str]]:
        return [c for c in self.calls if c[0] == "srun" and any(program_part in a for a in c)]


def head_context(tmp_path: Path, example: str, run: SlurmPool) -> Context:
    """A head node of ``example`` with its acceptance.json, and ``run`` for its commands."""
    plan = example_plan(example)
    target = tmp_path / ACCEPTANCE_PATH.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text(role_files(plan, "head")[ACCEPTANCE_PATH])
    return Context(root=tmp_path, run=run)


def names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i}" for i in range(1, count + 1)]


NODE_ARG = re.compile(r"^--nodelist=")
