"""What every step of the agent works with, passed to it explicitly: the node's root (every
filesystem path goes through it, so tests run on fake device trees), its AWS clients, the
command runner, the clock, the metadata service and user lookup; and the node's three files
of the contract (bootstrap.env, node.json, node.env), read through the contract's readers.

Every step of every room (boot, health, controller, power, accounting, workload) is a function
of a Context; nothing inherits from anything, and nothing reaches the node any other way.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..contract import (
    BOOTSTRAP_ENV_PATH,
    IMDS_IPV4,
    NODE_CONFIG_PATH,
    NODE_ENV_PATH,
    BootstrapEnv,
    DeployParameter,
    NodeConfig,
    NodeEnv,
    aws_client_config,
    load_document,
    parameter_name,
    read_bootstrap_env,
    read_node_env,
)

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_ecr import ECRClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_secretsmanager import SecretsManagerClient
    from mypy_boto3_ssm import SSMClient

IMDS = f"http://{IMDS_IPV4}/latest"


class AgentError(Exception):
    """A step failed; the message says which and why."""


def log(message: str) -> None:
    print(f"slurmstack-node: {message}", file=sys.stderr, flush=True)


class Runner(Protocol):
    def __call__(self, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]: ...


def run_command(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=check, text=True, capture_output=True)


class InputRunner(Protocol):
    def __call__(self, cmd: list[str], text: str) -> subprocess.CompletedProcess[str]: ...


def run_with_input(cmd: list[str], text: str) -> subprocess.CompletedProcess[str]:
    """``cmd`` with ``text`` on its standard input, never checked: how a secret reaches a
    command (not on its command line, where any user could read it in the process list)."""
    return subprocess.run(cmd, input=text, text=True, capture_output=True, check=False)


def imds_get(path: str) -> str:
    """IMDSv2: a session token first (the stack requires tokens), then the value."""
    token_req = urllib.request.Request(
        f"{IMDS}/api/token",
        method="PUT",
        headers={"X-aws-ec2-metadata-token-ttl-seconds": "300"},
    )
    with urllib.request.urlopen(token_req, timeout=5) as response:
        token = response.read().decode()
    # dynamic/... (the instance identity document) sits beside meta-data/.
    url = f"{IMDS}/{path}" if path.startswith("dynamic/") else f"{IMDS}/meta-data/{path}"
    req = urllib.request.Request(url, headers={"X-aws-ec2-metadata-token": token})
    with urllib.request.urlopen(req, timeout=5) as response:
        return str(response.read().decode())


def metadata(ctx: Context, path: str) -> str | None:
    """A metadata value, or None where the service has none (404: no spot notice, no lifecycle
    state outside an Auto Scaling group) or does not answer."""
    try:
        return ctx.imds(path)
    except (KeyError, OSError):  # KeyError: a test's table; HTTPError and URLError are OSErrors
        return None


def user_ids(name: str) -> tuple[int, int]:
    entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


class Aws:
    """The node's AWS clients, in its cluster's region, made on first use (boto3 is imported
    only by steps that call AWS). ``session`` returns the boto3 Session to use (tests give
    moto's), or None for boto3's default one."""

    def __init__(self, region: Callable[[], str], session: Callable[[], Any]) -> None:
        self._region = region
        self._session = session
        self._default: Any = None
        # One client per session and service, shared by threads (botocore's clients are
        # thread-safe): made once, as making one costs more than most calls.
        self._clients: dict[tuple[int, str], Any] = {}
        self._lock = threading.Lock()

    def _client(self, service: str) -> Any:
        with self._lock:
            session = self._session()
            if session is None:
                if self._default is None:
                    import boto3

                    self._default = boto3.session.Session()
                session = self._default
            key = (id(session), service)
            if key not in self._clients:
                from botocore.config import Config  # with boto3, in the image

                # Bounded retries in botocore's standard mode: throttling retried with backoff.
                config = Config(**aws_client_config())
                region = self._region()
                self._clients[key] = session.client(service, region_name=region, config=config)
            return self._clients[key]

    def ssm(self) -> SSMClient:
        client: SSMClient = self._client("ssm")
        return client

    def s3(self) -> S3Client:
        client: S3Client = self._client("s3")
        return client

    def ec2(self) -> EC2Client:
        client: EC2Client = self._client("ec2")
        return client

    def autoscaling(self) -> AutoScalingClient:
        client: AutoScalingClient = self._client("autoscaling")
        return client

    def ecr(self) -> ECRClient:
        client: ECRClient = self._client("ecr")
        return client

    def secretsmanager(self) -> SecretsManagerClient:
        client: SecretsManagerClient = self._client("secretsmanager")
        return client

    # The head's alert relay and every node's log shipping (no type stubs are installed).
    def sns(self) -> Any:
        return self._client("sns")

    def events(self) -> Any:
        return self._client("events")

    def logs(self) -> Any:
        return self._client("logs")


@dataclass
class Context:
    """The node as the agent sees it. Everything external is a field, so tests replace it."""

    root: Path = Path("/")
    session: Any = None  # a boto3 Session; None: boto3's default, made on first use
    run: Runner = run_command
    feed: InputRunner = run_with_input  # a command with text (a secret) on its standard input
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    imds: Callable[[str], str] = imds_get
    owner: Callable[[str], tuple[int, int]] = user_ids  # (uid, gid) of a user name
    aws: Aws = field(init=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.aws = Aws(lambda: self.bootstrap_env().region, lambda: self.session)

    # --- the node's files of the contract -------------------------------------------------

    def path(self, node_path: str) -> Path:
        return self.root / node_path.lstrip("/")

    def bootstrap_env(self) -> BootstrapEnv:
        path = self.path(BOOTSTRAP_ENV_PATH)
        if not path.exists():
            raise AgentError(f"{BOOTSTRAP_ENV_PATH} is missing (written by cloud-init)")
        try:
            return read_bootstrap_env(path.read_text())
        except KeyError as exc:
            raise AgentError(f"{BOOTSTRAP_ENV_PATH} has no {exc.args[0]}") from None

    def config(self) -> NodeConfig:
        path = self.path(NODE_CONFIG_PATH)
        if not path.exists():
            raise AgentError(
                f"{NODE_CONFIG_PATH} is missing: run `slurmstack-node sync-config` first"
            )
        return load_document(NodeConfig, path.read_text())

    def node_env(self) -> NodeEnv:
        path = self.path(NODE_ENV_PATH)
        return read_node_env(path.read_text() if path.exists() else "")

    def write_node_env(self, env: NodeEnv) -> None:
        write_atomic(self.path(NODE_ENV_PATH), env.text().encode(), 0o644)

    # --- deploy-time parameters -----------------------------------------------------------

    def parameter_name(self, key: DeployParameter | str) -> str:
        return parameter_name(self.bootstrap_env().parameter_prefix, key)

    def get_parameter(self, key: DeployParameter | str, max_age: float | None = None) -> str | None:
        """A deploy-time value (None while it does not exist), from the one answer a boot reads
        (slurmstack.node.parameters) when it is at most ``max_age`` seconds old. ``key``: a
        DeployParameter, or a file system of yours' (contract.existing_parameter)."""
        from . import parameters  # it builds on this module

        if max_age is None:
            return parameters.get(self, key)
        return parameters.get(self, key, max_age)

    def wait_parameter(
        self,
        key: DeployParameter | str,
        timeout: float = 3600.0,
        poll: float = 10.0,
        max_age: float | None = None,
    ) -> str:
        """Deploy-time values appear when the stack has created what they name (a file
        system can take a quarter of an hour): wait for them."""
        waited = 0.0
        while True:
            value = self.get_parameter(key, max_age)
            if value is not None:
                return value
            if waited >= timeout:
                raise AgentError(f"parameter {self.parameter_name(key)} did not appear")
            log(f"waiting for {self.parameter_name(key)}")
            self.sleep(poll)
            waited += poll

    # --- commands --------------------------------------------------------------------------

    def sh(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(list(cmd), check=check)

    def bounded(
        self, seconds: float, *cmd: str, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """``cmd`` killed after ``seconds`` (coreutils timeout: exit status 124; 127 when the
        command is not installed). A GPU that fell off the bus or a hung file system makes
        nvidia-smi and stat hang, and slurmd kills a HealthCheckProgram after 60 s."""
        return self.run(["timeout", "-k", "5", f"{seconds:g}", *cmd], check=check)

    def ok(self, *cmd: str) -> str:
        """Run ``cmd``; its output, or an AgentError (which the caller may retry)."""
        result = self.sh(*cmd, check=False)
        if result.returncode != 0:
            detail = (result.stderr or result.stdout or "").strip()
            raise AgentError(f"{' '.join(cmd)} failed: {detail}")
        return str(result.stdout)


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
