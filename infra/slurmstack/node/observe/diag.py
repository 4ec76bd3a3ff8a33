"""diag: a read-only bundle of this node for a bug report, as one .tar.gz: versions, the
node's configuration (slurm.conf, node.json), what Slurm says of it, the agent's state and the
tails of its logs. It changes nothing on the node and holds no secret: the munge key, the live
slurmdbd.conf (the database password) and the credentials the agent reads are never taken.
Every command is bounded in time (a hung file system or GPU must not hang the bundle); what
failed is in the bundle too, as its exit status and standard error."""

from __future__ import annotations

import io
import json
import tarfile
import time

from ...contract import (
    BOOTSTRAP_DONE,
    BOOTSTRAP_FAILED,
    CLOUD_INIT_OUTPUT_PATH,
    CONTROLLER_STATE_PATH,
    HEAD_LOG_FILES,
    HEALTH_DIR,
    LOG_SHIPPER_STATE_PATH,
    NODE_CONFIG_PATH,
    SLURM_CONF_PATH,
    WORKER_LOG_FILES,
)
from ..context import Context, metadata

COMMAND_SECONDS = 20
LOG_TAIL_BYTES = 1024 * 1024  # of each log: the recent part a report needs
# Files taken whole (small, no secrets); logs are taken as their tails.
FILES = (SLURM_CONF_PATH, NODE_CONFIG_PATH, BOOTSTRAP_DONE, BOOTSTRAP_FAILED,
         LOG_SHIPPER_STATE_PATH, CONTROLLER_STATE_PATH, "/etc/os-release")  # fmt: skip
COMMANDS = {
    "uname.txt": ("uname", "-a"),
    "slurm-version.txt": ("sinfo", "--version"),
    "nvidia-smi.txt": ("nvidia-smi",),
    "efa-devices.txt": ("fi_info", "-p", "efa", "-t", "FI_EP_RDM"),
    "mounts.txt": ("findmnt", "-l"),
    "failed-units.txt": ("systemctl", "--failed", "--no-legend"),
    "journal-slurmstack.txt": ("journalctl", "--no-pager", "-n", "500", "-u", "slurmstack-*"),
}


def _add(bundle: tarfile.TarFile, name: str, data: bytes, now: float) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), int(now), 0o644
    bundle.addfile(info, io.BytesIO(data))


def _tail(data: bytes) -> bytes:
    return data[-LOG_TAIL_BYTES:]


def bundle(ctx: Context) -> tuple[str, bytes]:
    """(the bundle's name, its .tar.gz bytes)."""
    now = ctx.clock()
    config = ctx.config()
    env = ctx.node_env()  # the node's Slurm name, learnt at boot
    instance = env.instance_id or metadata(ctx, "instance-id") or "unknown-instance"
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    name = f"slurmstack-diag-{config.cluster}-{instance}-{stamp}"
    commands = dict(COMMANDS)
    host = "" if config.is_head else env.node_name
    commands["sinfo.txt"] = ("sinfo", "-N", "-l")
    commands["scontrol-show-node.txt"] = ("scontrol", "show", "node", *([host] if host else []))
    if config.is_head:
        commands["squeue.txt"] = ("squeue", "-l")
    index: dict[str, object] = {"cluster": config.cluster, "role": config.role,
                                "instance": instance, "time": stamp, "commands": {}, "files": []}  # fmt: skip
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for out, cmd in sorted(commands.items()):
            result = ctx.bounded(COMMAND_SECONDS, *cmd)
            text = (result.stdout or "") + (
                f"\n--- stderr\n{result.stderr}" if result.stderr else ""
            )
            _add(tar, f"{name}/commands/{out}", text.encode(), now)
            index["commands"][" ".join(cmd)] = result.returncode  # type: ignore[index]
        logs = HEAD_LOG_FILES if config.is_head else WORKER_LOG_FILES
        log_paths = [p for paths in logs.values() for p in paths] + [CLOUD_INIT_OUTPUT_PATH]
        for node_path in (*FILES, *log_paths):
            path = ctx.path(node_path)
            if path.is_file():
                data = path.read_bytes()
                data = _tail(data) if node_path in log_paths else data
                _add(tar, f"{name}/files{node_path}", data, now)
                index["files"].append(node_path)  # type: ignore[attr-defined]
        health = ctx.path(HEALTH_DIR)
        if health.is_dir():
            for path in sorted(p for p in health.rglob("*") if p.is_file()):
                _add(tar, f"{name}/files{HEALTH_DIR}/{path.relative_to(health)}",
                     _tail(path.read_bytes()), now)  # fmt: skip
        _add(tar, f"{name}/index.json", json.dumps(index, indent=1, sort_keys=True).encode(), now)
    return name, raw.getvalue()
