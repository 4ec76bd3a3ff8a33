"""One node of the virtual cluster: a network namespace on the fabric, and inside it a PID,
mount and UTS namespace whose first process (node_side/node_init.py) lays out the node's own
root and holds it. Commands enter all four namespaces with nsenter. Killing that first process
kills every process of the node at once, as an instance that dies."""

from __future__ import annotations

import ctypes
import functools
import importlib
import json
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .cloudinit import INSTANCE_ID_PATH, SCRIPT_PATH, UserData
from .imds import Instance
from .netns import NETNS_DIR, Fabric
from .standins import (
    EFA_COUNTERS,
    EFA_PORT_ACTIVE,
    HEALTH_CHECK_ENV,
    KERNEL_LOG,
    NODE_PYTHON_MODULES,
    NODE_SIDE,
    NODE_TOOLS,
    NSSWITCH,
    NVIDIA_MAJOR,
    hosts_from_files,
)

NODE_INIT = NODE_SIDE / "node_init.py"
CHECKOUT = Path(__file__).resolve().parents[3]
# Directories a node writes to: each is an overlay on the host's, with the node's own upper layer
# (/usr's over the Slurm the cluster's nodes run too: node_slurm.py). One overlay for all of /usr: the
# host's root may itself be an overlay, and the kernel stacks overlays two deep at most.
OVERLAYS = ("/etc", "/var", "/usr", "/dev", "/sys/class")
TMPFS = (("/run", "mode=0755"), ("/dev/shm", "mode=1777"))
# What systemd and cloud-init give the commands they run (the standard endpoint override is
# added per cluster). The metadata service here shares a busy process with moto on a loaded
# machine: botocore's settings for a slower one (stand-in "metadata"; its defaults are one
# attempt of one second, which EC2's own service always meets).
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "AWS_METADATA_SERVICE_TIMEOUT": "5",
    "AWS_METADATA_SERVICE_NUM_ATTEMPTS": "3",
}
BOOT_SECONDS = 240
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Hardware:
    """What the instance type puts in the node (stand-ins "gpus" and "efa")."""

    gpus: int = 0
    efa_devices: int = 0


def node_files(hardware: Hardware, env: dict[str, str]) -> list[dict[str, str]]:
    """Files of the node (stand-ins "efa", "kernel-log", "health-check-env", "vpc-dns"): each
    EFA device's port state and counters (at zero), an empty kernel log of the node's own, the
    AWS settings of its commands, host names from /etc/hosts only."""
    ports = [
        {"path": f"/sys/class/infiniband/efa_{i}/ports/1/state", "content": EFA_PORT_ACTIVE}
        for i in range(hardware.efa_devices)
    ]
    ports += [
        {"path": f"/sys/class/infiniband/efa_{i}/ports/1/hw_counters/{name}", "content": "0\n"}
        for i in range(hardware.efa_devices)
        for name in EFA_COUNTERS
    ]
    aws = "".join(f"{k}={v}\n" for k, v in sorted(env.items()) if k.startswith("AWS_"))
    return [
        *ports,
        {"path": KERNEL_LOG, "content": ""},
        {"path": HEALTH_CHECK_ENV, "content": aws},
        {"path": NSSWITCH, "content": hosts_from_files(Path(NSSWITCH).read_text())},
    ]


@functools.cache
def _node_python_path() -> str:
    """Where the node's system python looks for locally installed modules."""
    out = subprocess.run(
        ["/usr/bin/python3", "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def _module_paths() -> dict[str, Path]:
    """This environment's copies of the modules boto3 needs (stand-in "image-boto3"): name in
    the node's python path -> package directory (or single-module file, as six.py)."""
    paths = {}
    for name in NODE_PYTHON_MODULES:
        file = Path(importlib.import_module(name).__file__ or "")
        if file.name == "__init__.py":
            paths[name] = file.parent
        else:
            paths[file.name] = file
    return paths


def _die_with_parent() -> None:
    # The node's first process (through unshare --kill-child) dies with this test process.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Node:
    def __init__(
        self,
        fabric: Fabric,
        directory: Path,
        instance: Instance,
        role: str,
        hardware: Hardware,
        aws_endpoint: str,
        label: str,
        run_directory: Path,
        layers: dict[str, tuple[Path, ...]],
    ) -> None:
        self.instance = instance
        self.role = role
        self.directory = directory
        self.run_directory = run_directory
        self.fabric = fabric
        self.env = {**BASE_ENV, "AWS_ENDPOINT_URL": aws_endpoint}
        self.alive = False
        directory.mkdir(parents=True)
        self.namespace = fabric.add_node(label, instance.address, instance.mac)
        self._init = self._start_init(hardware, layers)
        self.alive = True

    @property
    def address(self) -> str:
        return self.instance.address

    @property
    def instance_id(self) -> str:
        return self.instance.instance_id

    def _layer(self, target: str) -> Path:
        return self.directory / "layers" / target.strip("/").replace("/", "-")

    def _start_init(
        self, hardware: Hardware, layers: dict[str, tuple[Path, ...]]
    ) -> subprocess.Popen[bytes]:
        overlays = []
        for target in OVERLAYS:
            (self._layer(target) / "upper").mkdir(parents=True)
            (self._layer(target) / "work").mkdir()
            overlays.append(
                {
                    "target": target,
                    "upper": str(self._layer(target) / "upper"),
                    "work": str(self._layer(target) / "work"),
                    "image_layers": [str(layer) for layer in layers.get(target, ())],
                }
            )
        python_path = _node_python_path()
        links = [{"path": p, "target": str(t)} for p, t in NODE_TOOLS.items()]
        links += [
            {"path": f"{python_path}/{name}", "target": str(path)}
            for name, path in _module_paths().items()
        ]
        ready = self.directory / "ready"
        spec = {
            "hostname": "ip-" + self.address.replace(".", "-"),
            "overlays": overlays,
            "tmpfs": [{"target": t, "options": o} for t, o in TMPFS],
            "devices": [
                {"path": f"/dev/nvidia{i}", "major": NVIDIA_MAJOR, "minor": i}
                for i in range(hardware.gpus)
            ],
            "dirs": [f"/sys/class/infiniband/efa_{i}" for i in range(hardware.efa_devices)],
            "files": node_files(hardware, self.env),
            "links": links,
            "ready": str(ready),
            "cgroup_hold": str(self.directory / "cgroup-hold"),
            "run_directory": str(self.run_directory),
            # The checkout and this environment may lie under /tmp (a clone made with
            # mktemp): the node's private /tmp must not hide the scripts and modules it uses.
            "keep_visible": [str(CHECKOUT), sys.prefix],
        }
        spec_path = self.directory / "init.json"
        spec_path.write_text(json.dumps(spec, indent=1))
        log = open(self.directory / "init.log", "wb")  # noqa: SIM115 - lives as long as the node
        cmd = ["nsenter", f"--net={NETNS_DIR}/{self.namespace}", "unshare", "--pid", "--fork",
               "--kill-child", "--mount", "--uts", "--propagation", "private", "--mount-proc",
               "/usr/bin/python3", str(NODE_INIT), str(spec_path)]  # fmt: skip
        process = subprocess.Popen(
            cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent
        )
        deadline = time.monotonic() + 30
        while not ready.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(
                    f"node {self.address} did not start: {(self.directory / 'init.log').read_text()}"
                )
            time.sleep(0.02)
        return process

    @property
    def init_pid(self) -> int:
        """The node's first process, seen from here (unshare's one child)."""
        children = Path(f"/proc/{self._init.pid}/task/{self._init.pid}/children").read_text()
        return int(children.split()[0])

    def command(self, cmd: list[str]) -> list[str]:
        return ["nsenter", f"--target={self.init_pid}", "--mount", "--uts", "--net", "--pid",
                "--wd=/", "--", *cmd]  # fmt: skip

    def run(
        self, *cmd: str, input: str | None = None, timeout: float = 60, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """``cmd`` inside the node, as root, with the environment systemd and cloud-init give."""
        if not self.alive:
            raise AssertionError(f"{self.label()} is not running: cannot run {shlex.join(cmd)}")
        result = subprocess.run(
            self.command(list(cmd)),
            input=input,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"{self.label()}: {shlex.join(cmd)} exited {result.returncode}\n"
                f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
            )
        return result

    def label(self) -> str:
        return f"{self.role} node {self.address} ({self.instance_id})"

    def write_file(self, path: str, content: str, permissions: str, owner: str) -> None:
        script = 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod "$2" "$1" && chown "$3" "$1"'
        self.run("/bin/sh", "-c", script, "write", path, permissions, owner, input=content)

    def boot(self, user_data: UserData, step_dirs: dict[str, str], absent: frozenset[str]) -> None:
        """Run the user data as cloud-init would (cloudinit.py); the output is kept as
        cloud-init keeps it, in the node's /var/log/cloud-init-output.log."""
        self.write_file(INSTANCE_ID_PATH, self.instance_id + "\n", "0644", "root:root")
        for file in user_data.files:
            self.write_file(file.path, file.content, file.permissions, file.owner)
        self.write_file(SCRIPT_PATH, user_data.script(step_dirs, absent), "0700", "root:root")
        shell = f"{SCRIPT_PATH} >> /var/log/cloud-init-output.log 2>&1"
        result = self.run("/bin/sh", "-c", shell, timeout=BOOT_SECONDS, check=False)
        if result.returncode != 0:
            raise AssertionError(
                f"{self.label()}: runcmd failed ({result.returncode})\n{self.logs()}"
            )

    def node_file(self, path: str) -> Path:
        """A file the node wrote, read from its own layer (the node need not be alive)."""
        for target in OVERLAYS:
            if path.startswith(target + "/"):
                return self._layer(target) / "upper" / path[len(target) + 1 :]
        raise ValueError(f"{path} is not in a node layer")

    def logs(self, tail: int = 3000) -> str:
        paths = [self.node_file("/var/log/cloud-init-output.log")]
        for directory in ("/var/log/vcluster", "/var/log/slurm", "/var/log/munge"):
            folder = self.node_file(directory)
            paths += sorted(folder.glob("*.log")) if folder.is_dir() else []
        out = [f"=== {self.label()}"]
        for path in paths:
            if path.exists():
                out.append(f"--- {path.name}\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(out)

    def running(self) -> bool:
        """Whether the node's first process (and so any process of the node) still runs."""
        return self._init.poll() is None

    def kill(self) -> None:
        """The instance dies: every process of the node at once, then its network."""
        if self.alive:
            self.alive = False
            self._init.kill()
            try:
                self._init.wait(timeout=10)
            except subprocess.TimeoutExpired:
                print(f"vcluster: {self.label()} did not stop", file=sys.stderr)
            self.fabric.remove_node(self.namespace)
