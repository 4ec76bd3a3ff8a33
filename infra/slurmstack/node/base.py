"""The node as the agent sees it: its configuration and environment, AWS clients, deploy-time
parameters, commands, and every path under --root. The concern modules extend NodeBase."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from ..contract import (
    BOOTSTRAP_ENV_PATH,
    HEAD_ROLE,
    IMDS_IPV4,
    NODE_CONFIG_PATH,
    NODE_ENV_PATH,
    BootstrapEnv,
    DeployParameter,
    node_name,
    parameter_name,
    read_bootstrap_env,
)

# SSM parameter keys under the cluster's prefix.
PARAM_HEAD_ADDRESS = DeployParameter.HEAD_ADDRESS
PARAM_BUCKET = DeployParameter.BUCKET
PARAM_LUSTRE_DNS = DeployParameter.LUSTRE_DNS
PARAM_LUSTRE_MOUNT_NAME = DeployParameter.LUSTRE_MOUNT_NAME
PARAM_EFS_ID = DeployParameter.EFS_ID
PARAM_CONFIG_MANIFEST = DeployParameter.CONFIG_MANIFEST
PARAM_STATE_VOLUME_ID = DeployParameter.STATE_VOLUME_ID

BOOTSTRAP_ENV = BOOTSTRAP_ENV_PATH
NODE_CONFIG = NODE_CONFIG_PATH
NODE_ENV = NODE_ENV_PATH
IMDS = f"http://{IMDS_IPV4}/latest"
__all__ = ["HEAD_ROLE", "node_name"]


class AgentError(Exception):
    """A step failed; the message says which and why."""


def log(message: str) -> None:
    print(f"slurmstack-node: {message}", file=sys.stderr, flush=True)


def run_command(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=check, text=True, capture_output=True)


def imds_get(path: str) -> str:
    """IMDSv2: a session token first (the stack requires tokens), then the value."""
    token_req = urllib.request.Request(
        f"{IMDS}/api/token",
        method="PUT",
        headers={"X-aws-ec2-metadata-token-ttl-seconds": "300"},
    )
    with urllib.request.urlopen(token_req, timeout=5) as response:
        token = response.read().decode()
    req = urllib.request.Request(
        f"{IMDS}/meta-data/{path}", headers={"X-aws-ec2-metadata-token": token}
    )
    with urllib.request.urlopen(req, timeout=5) as response:
        return str(response.read().decode())


def read_env_file(path: Path) -> dict[str, str]:
    env: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                key, value = line.split("=", 1)
                env[key.strip()] = value.strip()
    return env


def write_atomic(path: Path, data: bytes, mode: int, owner: tuple[int, int] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.slurmstack-new")
    temporary.unlink(missing_ok=True)
    # Created owner-only whatever the umask: a secret (the munge key) is never readable by
    # anyone else, not even while it is being written.
    with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(temporary, mode)
    if owner is not None:
        os.chown(temporary, *owner)
    os.replace(temporary, path)


class NodeBase:
    """The node as the agent sees it. Everything external is injectable for tests."""

    def __init__(
        self,
        root: str | Path = "/",
        session: object | None = None,
        imds: object = imds_get,
        run: object = run_command,
        sleep: object = time.sleep,
        owner: object | None = None,
        clock: object = time.time,
    ) -> None:
        self.root = Path(root)
        self._session = session
        self.imds = imds
        self.run = run
        self.sleep = sleep
        self.clock = clock
        # (uid, gid) lookup by user name; tests pass their own.
        self.owner = owner or (lambda name: (pwd.getpwnam(name).pw_uid, pwd.getpwnam(name).pw_gid))

    # --- context ------------------------------------------------------------------------

    def path(self, node_path: str) -> Path:
        return self.root / node_path.lstrip("/")

    def bootstrap_env(self) -> BootstrapEnv:
        path = self.path(BOOTSTRAP_ENV)
        if not path.exists():
            raise AgentError(f"{BOOTSTRAP_ENV} is missing (written by cloud-init)")
        try:
            return read_bootstrap_env(path.read_text())
        except KeyError as exc:
            raise AgentError(f"{BOOTSTRAP_ENV} has no {exc.args[0]}") from None

    def config(self) -> dict[str, Any]:
        path = self.path(NODE_CONFIG)
        if not path.exists():
            raise AgentError(f"{NODE_CONFIG} is missing: run `slurmstack-node sync-config` first")
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    def node_env(self) -> dict[str, str]:
        return read_env_file(self.path(NODE_ENV))

    @property
    def role(self) -> str:
        return self.bootstrap_env().role

    def client(self, service: str):  # type: ignore[no-untyped-def]
        if self._session is None:
            import boto3

            self._session = boto3.session.Session()
        region = self.bootstrap_env().region
        return self._session.client(service, region_name=region)  # type: ignore[attr-defined]

    def parameter_name(self, key: str) -> str:
        return parameter_name(self.bootstrap_env().parameter_prefix, key)

    def get_parameter(self, key: str) -> str | None:
        ssm = self.client("ssm")
        try:
            return str(ssm.get_parameter(Name=self.parameter_name(key))["Parameter"]["Value"])
        except ssm.exceptions.ParameterNotFound:
            return None

    def wait_parameter(self, key: str, timeout: float = 3600.0, poll: float = 10.0) -> str:
        """Deploy-time values appear when the stack has created what they name (a file
        system can take a quarter of an hour): wait for them."""
        waited = 0.0
        while True:
            value = self.get_parameter(key)
            if value is not None:
                return value
            if waited >= timeout:
                raise AgentError(f"parameter {self.parameter_name(key)} did not appear")
            log(f"waiting for {self.parameter_name(key)}")
            self.sleep(poll)  # type: ignore[operator]
            waited += poll

    def sh(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(list(cmd), check=check)  # type: ignore[operator,no-any-return]

    # --- files, mounts and commands ------------------------------------------------------

    def _read(self, node_path: str) -> str | None:
        path = self.path(node_path)
        return path.read_text() if path.exists() else None

    def _mkdir(self, node_path: str) -> None:
        self.path(node_path).mkdir(parents=True, exist_ok=True)

    def _mounts(self) -> list[tuple[str, str]]:
        path = self.path("/proc/mounts")
        out = []
        for line in path.read_text().splitlines() if path.exists() else []:
            fields = line.split()
            if len(fields) >= 2:
                out.append((fields[0], fields[1]))
        return out

    def _mounted(self, mount: str) -> bool:
        return any(point == mount for _, point in self._mounts())

    def _mount_point_of(self, device: str) -> str | None:
        for source, point in self._mounts():
            real = os.path.realpath(self.path(source)) if source.startswith("/dev/") else source
            if source == device or real == str(self.path(device)):
                return point
        return None

    def _retry(self, cmd: list[str], attempts: int, delay: float) -> None:
        """A new mount target's DNS name takes up to 90 s to resolve (EFS User Guide); a
        file system still being created answers later still."""
        for attempt in range(1, attempts + 1):
            result = self.sh(*cmd, check=False)
            if result.returncode == 0:
                return
            log(f"{' '.join(cmd)} failed (attempt {attempt}/{attempts}): {result.stderr.strip()}")
            if attempt < attempts:
                self.sleep(delay)  # type: ignore[operator]
        raise AgentError(f"{' '.join(cmd)} failed {attempts} times")

    def _fstab(self, source: str, path: str, fstype: str, options: str) -> None:
        fstab = self.path("/etc/fstab")
        lines = fstab.read_text().splitlines() if fstab.exists() else []
        lines = [line for line in lines if line.split()[1:2] != [path]]
        lines.append(f"{source} {path} {fstype} {options} 0 0")
        write_atomic(fstab, ("\n".join(lines) + "\n").encode(), 0o644)

    def _ok(self, *cmd: str) -> str:
        """Run ``cmd``; its output, or an AgentError (which the caller may retry)."""
        result = self.sh(*cmd, check=False)
        if result.returncode != 0:
            detail = (result.stderr or result.stdout or "").strip()
            raise AgentError(f"{' '.join(cmd)} failed: {detail}")
        return str(result.stdout)
