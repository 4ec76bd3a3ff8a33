#!/usr/bin/python3
"""slurmstack-node: the agent that configures a slurmstack node at boot.

One self-contained file (Python 3 standard library and boto3), installed from the cluster's
config store by the bootstrap in the node's cloud-init document. Subcommands:

  sync-config   read the manifest (named by its parameter), download this role's files from the config
                store, check their sha256, write them atomically; print what changed (head: enable
                the reaper's timer where it is disabled)
  params        wait for the deploy-time SSM parameters this role needs, write node.env,
                name the node (<pool>-<n>, n = low 16 bits of its private address)
  munge-key     write /etc/munge/munge.key (0400, munge) from Secrets Manager
  health        expected GPUs, Neuron and EFA devices present? If not, mark the instance
                Unhealthy in its Auto Scaling group and exit non-zero (slurmd never starts)
  scratch       RAID0 over the instance-store NVMe disks, mounted at the pool's scratch path
  mounts        EFS and FSx for Lustre, retried until they answer (Lustre over EFA: lnet-efa first)
  lnet-efa      LNet for an EFA-enabled FSx for Lustre file system: TCP on the primary interface,
                the pool's EFA interfaces, EFA preferred; idempotent, retried (also run by
                slurmstack-lustre-efa.service before the Lustre mount at every boot)
  state-volume  (head) the Slurm state EBS volume: find, format once, mount
  reap          (head) delete the records of dead dynamic nodes: a replaced instance registers
                under a new name and the old record would stay DOWN for ever. Only nodes of the
                cluster's pools that slurmctld itself marked DOWN and not responding, with no
                job, longer than the grace period ago, and no live instance of the cluster at
                their address; run every few minutes by slurmstack-reaper.timer

Every filesystem path goes through --root (default /), so tests run on fake device trees.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import ipaddress
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

# SSM parameter keys under the cluster's prefix (slurmstack.plan.DeployParameter).
PARAM_HEAD_ADDRESS = "head/address"
PARAM_BUCKET = "bucket/name"
PARAM_LUSTRE_DNS = "lustre/dns-name"
PARAM_LUSTRE_MOUNT_NAME = "lustre/mount-name"
PARAM_EFS_ID = "efs/id"
PARAM_CONFIG_MANIFEST = "config/manifest"
PARAM_STATE_VOLUME_ID = "head/state-volume-id"

BOOTSTRAP_ENV = "/etc/slurmstack/bootstrap.env"
NODE_CONFIG = "/etc/slurmstack/node.json"
NODE_ENV = "/etc/slurmstack/node.env"
MUNGE_KEY = "/etc/munge/munge.key"
HEAD_ROLE = "head"
INSTANCE_STORE_MODEL = "Amazon EC2 NVMe Instance Storage"
EBS_MODEL = "Amazon Elastic Block Store"
SCRATCH_MD = "/dev/md/slurmstack-scratch"
# Amazon EFS User Guide, "Mounting on Amazon EC2 Linux instances using the NFS client".
EFS_OPTIONS = "nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport"
LUSTRE_OPTIONS = "noatime,flock"
# FSx for Lustre client for Ubuntu, from the FSx client repository (FSx User Guide,
# "Installing the Lustre client").
FSX_KEY_URL = (
    "https://fsx-lustre-client-repo-public-keys.s3.amazonaws.com/fsx-ubuntu-public-key.asc"
)
FSX_REPO = "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu"
FSX_KEYRING = "/usr/share/keyrings/fsx-ubuntu-public-key.gpg"
IMDS = "http://169.254.169.254/latest"
# Lustre over EFA (FSx for Lustre User Guide, "Configuring EFA clients"; the LNet steps are those
# of the EKS User Guide, "Optimize Amazon FSx for Lustre performance on nodes (EFA)"): the EFA
# LND (kefalnd) bound to the primary interface, a tcp network on that interface (the mount
# still names the file system by its @tcp address), one efa network interface per selected EFA
# device with 32 peer credits, discovery on and a selection rule that prefers efa.
LNET_EFA_UNIT = "slurmstack-lustre-efa.service"
LNET_EFA_PEER_CREDITS = 32
# The EKS guide's client check refuses EFA drivers older than this.
EFA_DRIVER_MIN_VERSION = (2, 12, 1)
# Keys of slurm.conf that scontrol reconfigure does not apply: slurmctld must restart.
RESTART_KEYS = ("MaxNodeCount", "SlurmctldPort", "SlurmdPort", "SlurmctldParameters")
HOSTS_BEGIN = "# slurmstack begin"
HOSTS_END = "# slurmstack end"
# The reaper (head node). Its timer is enabled by sync-config wherever it is merely disabled;
# an operator turns the reaper off for good with `systemctl mask slurmstack-reaper.timer`.
REAPER_TIMER = "slurmstack-reaper.timer"
REAPER_TIMER_PATH = f"/etc/systemd/system/{REAPER_TIMER}"
# How long a record must have been DOWN before it is deleted (slurmstack.plan.REAPER_GRACE_SECONDS).
REAP_GRACE_SECONDS = 900
# Slurm's times in the form SLURM_TIME_FORMAT=standard prints, on Slurm 22.05 and 23.11.
SCONTROL = ("env", "SLURM_TIME_FORMAT=standard", "scontrol")
SLURM_TIME = "%Y-%m-%dT%H:%M:%S"
# State flags a record may carry and still be deleted. Any other (COMPLETING, RESERVED, MAINT,
# FAIL, REBOOT_*, POWER*, PLANNED, ...) keeps it: a job, a reservation or an operator's
# intention is attached to the node.
REAPABLE_FLAGS = frozenset({"DYNAMIC_NORM", "NOT_RESPONDING", "DRAIN", "INVALID_REG"})
# Tags every instance of a pool carries (slurmstack.stack.common).
CLUSTER_TAG = "slurmstack:cluster"
POOL_TAG = "slurmstack:pool"
# EC2 states in which an instance still holds its private address.
LIVE_INSTANCE_STATES = ("pending", "running", "stopping", "stopped")


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


def node_name(prefix: str, address: str) -> str:
    """<pool>-<n>, n = the low 16 bits of the private IPv4 address (unique in a subnet,
    which AWS limits to a /16)."""
    return f"{prefix}{int(ipaddress.IPv4Address(address)) & 0xFFFF}"


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
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(temporary, mode)
    if owner is not None:
        os.chown(temporary, *owner)
    os.replace(temporary, path)


def file_mode(node_path: str) -> int:
    executable = node_path.startswith("/usr/local/bin/") or node_path.endswith(".sh")
    return 0o755 if executable else 0o644


class Node:
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

    def bootstrap_env(self) -> dict[str, str]:
        env = read_env_file(self.path(BOOTSTRAP_ENV))
        if not env:
            raise AgentError(f"{BOOTSTRAP_ENV} is missing (written by cloud-init)")
        return env

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
        return self.bootstrap_env()["SLURMSTACK_ROLE"]

    def client(self, service: str):  # type: ignore[no-untyped-def]
        if self._session is None:
            import boto3

            self._session = boto3.session.Session()
        region = self.bootstrap_env()["SLURMSTACK_REGION"]
        return self._session.client(service, region_name=region)  # type: ignore[attr-defined]

    def parameter_name(self, key: str) -> str:
        return f"{self.bootstrap_env()['SLURMSTACK_PARAMETER_PREFIX']}/{key}"

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

    # --- sync-config --------------------------------------------------------------------

    def sync_config(self, timeout: float = 3600.0, poll: float = 10.0) -> list[str]:
        """Bring this role's files up to date with the manifest; return the changed paths."""
        role = self.role
        manifest_key = self.wait_parameter(PARAM_CONFIG_MANIFEST, timeout, poll)
        bucket = self.wait_parameter(PARAM_BUCKET, timeout, poll)
        s3 = self.client("s3")
        # The parameter names the manifest object by its content hash; check it like any file.
        manifest_body = s3.get_object(Bucket=bucket, Key=manifest_key)["Body"].read()
        if hashlib.sha256(manifest_body).hexdigest() != manifest_key.rsplit("/", 1)[-1]:
            raise AgentError(f"s3://{bucket}/{manifest_key} does not match its sha256")
        manifest = json.loads(manifest_body)
        if role not in manifest:
            raise AgentError(f"the manifest has no entry for role {role!r}")
        changed: list[str] = []
        old_slurm_conf = self._read("/etc/slurm/slurm.conf")
        for node_path, key in sorted(manifest[role].items()):
            digest = key.rsplit("/", 1)[-1]
            target = self.path(node_path)
            if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == digest:
                continue
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            if hashlib.sha256(body).hexdigest() != digest:
                raise AgentError(f"s3://{bucket}/{key} does not match its sha256")
            write_atomic(target, body, file_mode(node_path))
            changed.append(node_path)
        if any(p.startswith("/etc/systemd/") for p in changed):
            self.sh("systemctl", "daemon-reload", check=False)
        if role == HEAD_ROLE:
            self._enable_reaper()
        if role == HEAD_ROLE and "/etc/slurm/slurm.conf" in changed and old_slurm_conf:
            new = self._read("/etc/slurm/slurm.conf") or ""
            if _restart_keys(old_slurm_conf) != _restart_keys(new):
                active = self.sh("systemctl", "is-active", "--quiet", "slurmctld", check=False)
                if active.returncode == 0:
                    log("a key that reconfigure cannot apply changed: restarting slurmctld")
                    self.sh("systemctl", "restart", "slurmctld")
        return changed

    def _read(self, node_path: str) -> str | None:
        path = self.path(node_path)
        return path.read_text() if path.exists() else None

    def _enable_reaper(self) -> None:
        """Enable the reaper's timer where it is installed and merely disabled: on a new head
        node, and on one that got the timer from an older agent. A masked timer stays off."""
        if not self.path(REAPER_TIMER_PATH).exists():
            return
        state = self.sh("systemctl", "is-enabled", REAPER_TIMER, check=False).stdout.strip()
        if state == "disabled":
            self.sh("systemctl", "enable", "--now", REAPER_TIMER, check=False)

    # --- params -------------------------------------------------------------------------

    def params(self, timeout: float = 3600.0, poll: float = 10.0) -> dict[str, str]:
        config = self.config()
        role = str(config["role"])
        cluster = str(config["cluster"])
        env: dict[str, str] = {}
        address = self.imds("local-ipv4")  # type: ignore[operator]
        env["SLURMSTACK_INSTANCE_ID"] = self.imds("instance-id")  # type: ignore[operator]
        env["SLURMSTACK_ADDRESS"] = address
        kinds = {m["kind"] for m in config.get("mounts", [])}
        if role == HEAD_ROLE:
            name = f"{cluster}-head"
            hosts = [f"{address} {name}"]
        else:
            name = node_name(str(config["node_name_prefix"]), address)
            head = self.wait_parameter(PARAM_HEAD_ADDRESS, timeout, poll)
            env["SLURMSTACK_HEAD_ADDRESS"] = head
            hosts = [f"{head} {cluster}-head", f"{address} {name}"]
        env["SLURMSTACK_NODE_NAME"] = name
        if "efs" in kinds:
            env["SLURMSTACK_EFS_ID"] = self.wait_parameter(PARAM_EFS_ID, timeout, poll)
        if "lustre" in kinds:
            env["SLURMSTACK_LUSTRE_DNS"] = self.wait_parameter(PARAM_LUSTRE_DNS, timeout, poll)
            env["SLURMSTACK_LUSTRE_MOUNT_NAME"] = self.wait_parameter(
                PARAM_LUSTRE_MOUNT_NAME, timeout, poll
            )
        text = "".join(f"{k}={v}\n" for k, v in sorted(env.items()))
        write_atomic(self.path(NODE_ENV), text.encode(), 0o644)
        self._write_hosts(hosts)
        # slurmctld only starts on the host SlurmctldHost names; nodes carry their Slurm name.
        self.sh("hostnamectl", "set-hostname", name, check=False)
        return env

    def _write_hosts(self, lines: list[str]) -> None:
        path = self.path("/etc/hosts")
        current = path.read_text() if path.exists() else ""
        kept, skipping = [], False
        for line in current.splitlines():
            if line == HOSTS_BEGIN:
                skipping = True
            elif line == HOSTS_END:
                skipping = False
            elif not skipping:
                kept.append(line)
        block = [HOSTS_BEGIN, *lines, HOSTS_END]
        write_atomic(path, ("\n".join(kept + block) + "\n").encode(), 0o644)

    # --- munge-key ----------------------------------------------------------------------

    def munge_key(self) -> Path:
        secret = self.bootstrap_env()["SLURMSTACK_MUNGE_SECRET"]
        value = self.client("secretsmanager").get_secret_value(SecretId=secret)
        key = value.get("SecretBinary")
        if key is None:
            raise AgentError(f"secret {secret} holds no binary key")
        if len(key) < 32:
            raise AgentError(f"secret {secret} is {len(key)} bytes; munge needs at least 32")
        path = self.path(MUNGE_KEY)
        write_atomic(path, bytes(key), 0o400, owner=self.owner("munge"))  # type: ignore[operator]
        return path

    # --- health -------------------------------------------------------------------------

    def health_problems(self) -> list[str]:
        expected = dict(self.config().get("health") or {})
        problems: list[str] = []
        dev = self.path("/dev")
        gpus = _count(dev, r"nvidia\d+")
        if gpus != expected.get("gpus", 0):
            problems.append(f"{gpus} GPU device files (/dev/nvidia*), expected {expected['gpus']}")
        elif gpus and shutil.which("nvidia-smi"):
            listed = self.sh(
                "nvidia-smi", "--query-gpu=index", "--format=csv,noheader", check=False
            )
            seen = len(listed.stdout.split()) if listed.returncode == 0 else 0
            if seen != gpus:
                problems.append(f"nvidia-smi lists {seen} GPUs, expected {gpus}")
        neuron = _count(dev, r"neuron\d+")
        if neuron != expected.get("neuron_devices", 0):
            problems.append(f"{neuron} Neuron devices, expected {expected['neuron_devices']}")
        infiniband = self.path("/sys/class/infiniband")
        efa = len(list(infiniband.iterdir())) if infiniband.is_dir() else 0
        if efa != expected.get("efa_devices", 0):
            problems.append(
                f"{efa} EFA devices (/sys/class/infiniband), expected {expected['efa_devices']}"
            )
        return problems

    def health(self) -> list[str]:
        """Problems found; when there are any the instance is marked Unhealthy so its Auto
        Scaling group replaces it."""
        problems = self.health_problems()
        if problems:
            instance = self.node_env().get("SLURMSTACK_INSTANCE_ID") or self.imds("instance-id")  # type: ignore[operator]
            for problem in problems:
                log(f"health check failed: {problem}")
            self.client("autoscaling").set_instance_health(
                InstanceId=instance, HealthStatus="Unhealthy", ShouldRespectGracePeriod=False
            )
            log(f"marked {instance} Unhealthy in its Auto Scaling group")
        return problems

    # --- scratch ------------------------------------------------------------------------

    def instance_store_disks(self) -> list[str]:
        block = self.path("/sys/block")
        disks = []
        for entry in sorted(block.iterdir()) if block.is_dir() else []:
            model = entry / "device" / "model"
            if model.exists() and model.read_text().strip() == INSTANCE_STORE_MODEL:
                disks.append(entry.name)
        return disks

    def scratch(self) -> str | None:
        config = self.config()
        scratch = config.get("scratch")
        if not scratch:
            return None
        mount = str(scratch["mount"])
        if self._mounted(mount):
            return mount
        disks = self.instance_store_disks()
        if not disks:
            log("no instance-store NVMe disks: no scratch array")
            return None
        busy = [d for d in disks if any((self.path("/sys/block") / d / "holders").glob("*"))]
        if busy:
            # The image already assembled the disks (the Deep Learning AMI mounts them at
            # /opt/dlami/nvme): reuse that file system rather than destroy it.
            holder = next((self.path("/sys/block") / busy[0] / "holders").iterdir()).name
            source = self._mount_point_of(f"/dev/{holder}")
            if source is None:
                raise AgentError(f"instance-store disks {busy} are in use but not mounted")
            self._mkdir(mount)
            self.sh("mount", "--bind", source, mount)
            return mount
        devices = [f"/dev/{d}" for d in disks]
        if len(devices) == 1:
            device = devices[0]
        else:
            device = SCRATCH_MD
            if not self.path(SCRATCH_MD).exists():
                self.sh(
                    "mdadm",
                    "--create",
                    SCRATCH_MD,
                    "--run",
                    "--level=0",
                    "--chunk=256",
                    f"--raid-devices={len(devices)}",
                    *devices,
                )
        if self.sh("blkid", device, check=False).returncode != 0:
            self.sh("mkfs.ext4", "-F", "-q", "-L", "scratch", "-E", "nodiscard", device)
        self._mkdir(mount)
        self.sh("mount", "-o", "noatime", device, mount)
        self.sh("chmod", "1777", mount)
        return mount

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

    # --- shared file systems ------------------------------------------------------------

    def mounts(self, attempts: int = 30, delay: float = 10.0) -> list[str]:
        config = self.config()
        env = self.node_env()
        region = str(config["region"])
        done = []
        for mount in config.get("mounts", []):
            kind, path = mount["kind"], mount["path"]
            if kind == "efs":
                source = f"{env['SLURMSTACK_EFS_ID']}.efs.{region}.amazonaws.com:/"
                fstype, options = "nfs4", EFS_OPTIONS
            elif kind == "lustre":
                self._lustre_client()
                dns, name = env["SLURMSTACK_LUSTRE_DNS"], env["SLURMSTACK_LUSTRE_MOUNT_NAME"]
                # The same source over TCP or EFA: the client reaches the MGS at its @tcp
                # address, discovery then finds the servers' EFA NIDs, which LNet prefers.
                source = f"{dns}@tcp:/{name}"
                fstype, options = "lustre", LUSTRE_OPTIONS
                if int(config.get("lustre_efa_interfaces") or 0):
                    self.lnet_efa(attempts=attempts, delay=delay)
                    # At every later boot systemd runs the LNet setup before this mount.
                    options += f",x-systemd.requires={LNET_EFA_UNIT}"
            else:
                raise AgentError(f"unknown mount kind {kind!r}")
            self._fstab(source, path, fstype, f"{options},_netdev,nofail")
            if not self._mounted(path):
                self._mkdir(path)
                self._retry(["mount", path], attempts, delay)
            done.append(path)
        return done

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

    def _lustre_client(self) -> None:
        if shutil.which("mount.lustre") or self.path("/sbin/mount.lustre").exists():
            return
        codename = self.sh("lsb_release", "-cs").stdout.strip()
        self.sh("sh", "-c", f"curl -fsSL {FSX_KEY_URL} | gpg --dearmor -o {FSX_KEYRING}")
        source = f"deb [signed-by={FSX_KEYRING}] {FSX_REPO} {codename} main\n"
        write_atomic(
            self.path("/etc/apt/sources.list.d/fsxlustreclientrepo.list"), source.encode(), 0o644
        )
        self.sh("apt-get", "update", "-q")
        kernel = self.sh("uname", "-r").stdout.strip()
        self.sh("apt-get", "install", "-y", "-q", f"lustre-client-modules-{kernel}")

    # --- Lustre over EFA ---------------------------------------------------------------

    def lnet_efa(self, attempts: int = 30, delay: float = 10.0) -> list[str]:
        """Configure LNet for Lustre over EFA; return the EFA devices it uses ([] when this
        pool mounts Lustre over TCP). Safe to run again: what is already configured is kept.
        The prerequisites are checked once; the configuration is retried until it verifies."""
        wanted = int(self.config().get("lustre_efa_interfaces") or 0)
        if not wanted:
            log("this pool mounts Lustre over TCP: no LNet EFA configuration")
            return []
        self._check_efa_client()
        for attempt in range(1, attempts + 1):
            try:
                interface = self._primary_interface()
                devices = pick_efa_devices(self.efa_devices(), wanted)
                if not devices:
                    raise AgentError("no EFA devices under /sys/class/infiniband")
                self._configure_lnet(interface, devices)
                return devices
            except AgentError as exc:
                log(f"LNet over EFA (attempt {attempt}/{attempts}): {exc}")
                if attempt >= attempts:
                    raise
                self.sleep(delay)  # type: ignore[operator]
        return []

    def _check_efa_client(self) -> None:
        """The EFA driver and the Lustre client's EFA LND must be there (FSx for Lustre
        User Guide: Ubuntu 22.04+ with kernel 6.8+ and the FSx Lustre client)."""
        driver = self.sh("modinfo", "-F", "version", "efa", check=False)
        version = parse_version(driver.stdout) if driver.returncode == 0 else None
        if version is None:
            raise AgentError("the EFA kernel driver is not installed (modinfo efa)")
        if version < EFA_DRIVER_MIN_VERSION:
            wanted = ".".join(map(str, EFA_DRIVER_MIN_VERSION))
            raise AgentError(f"EFA driver {driver.stdout.strip()} is older than {wanted}")
        if self.sh("modinfo", "-F", "filename", "kefalnd", check=False).returncode != 0:
            raise AgentError(
                "the Lustre client has no EFA network driver (kefalnd): install the FSx "
                "Lustre client modules for this kernel (6.8 or later)"
            )

    def _primary_interface(self) -> str:
        """The network interface holding the node's private address (card 0)."""
        address = self.node_env().get("SLURMSTACK_ADDRESS") or self.imds("local-ipv4")  # type: ignore[operator]
        for line in self._ok("ip", "-o", "-4", "addr", "show").splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[2] == "inet" and fields[3].split("/")[0] == address:
                return fields[1]
        raise AgentError(f"no network interface holds {address}")

    def efa_devices(self) -> list[str]:
        """EFA devices (driver efa) under /sys/class/infiniband, sorted by name."""
        infiniband = self.path("/sys/class/infiniband")
        found = []
        for entry in sorted(infiniband.iterdir()) if infiniband.is_dir() else []:
            driver = entry / "device" / "driver"
            if os.path.basename(os.path.realpath(driver)) == "efa":
                found.append(entry.name)
        return found

    def _configure_lnet(self, interface: str, devices: list[str]) -> None:
        self._ok("modprobe", "lnet")
        # Loaded already (an earlier run): modprobe keeps it, with the same interface.
        self._ok("modprobe", "kefalnd", f"ipif_name={interface}")
        self._ok("modprobe", "ksocklnd")
        self.sh("lnetctl", "lnet", "configure", check=False)  # already configured: harmless
        nets = lnet_interfaces(self._lnetctl("net", "show"))
        if interface not in nets.get("tcp", []):
            # A tcp network on another interface (LNet's default pick) is replaced.
            if "tcp" in nets:
                self.sh("lnetctl", "net", "del", "--net", "tcp", check=False)
            self._lnetctl("net", "add", "--net", "tcp", "--if", interface)
        for device in devices:
            if device not in nets.get("efa", []):
                credits = str(LNET_EFA_PEER_CREDITS)
                self._lnetctl(
                    "net", "add", "--net", "efa", "--if", device, "--peer-credits", credits
                )
        self._lnetctl("set", "discovery", "1")
        if not prefers_efa(self._lnetctl("udsp", "show")):
            self._lnetctl("udsp", "add", "--src", "efa", "--priority", "0")
        self._ok("modprobe", "lustre")
        configured = lnet_interfaces(self._lnetctl("net", "show"))
        missing = [d for d in devices if d not in configured.get("efa", [])]
        if missing:
            raise AgentError(f"EFA interfaces not in LNet: {' '.join(missing)}")
        log(f"LNet over EFA: tcp on {interface}, efa on {' '.join(devices)}")

    def _lnetctl(self, *args: str) -> str:
        return self._ok("lnetctl", *args)

    def _ok(self, *cmd: str) -> str:
        """Run ``cmd``; its output, or an AgentError (which the caller may retry)."""
        result = self.sh(*cmd, check=False)
        if result.returncode != 0:
            detail = (result.stderr or result.stdout or "").strip()
            raise AgentError(f"{' '.join(cmd)} failed: {detail}")
        return str(result.stdout)

    # --- state volume (head) ------------------------------------------------------------

    def state_volume_device(self) -> str | None:
        """The state volume's NVMe disk: the EBS disk whose serial is the volume id without
        its dash (the stack publishes the id); without the id, the one EBS disk that is
        neither the root disk nor in use."""
        volume = self.get_parameter(PARAM_STATE_VOLUME_ID)
        block = self.path("/sys/block")
        candidates = []
        for entry in sorted(block.iterdir()) if block.is_dir() else []:
            device = entry / "device"
            if _read_strip(device / "model") != EBS_MODEL:
                continue
            if volume:
                if _read_strip(device / "serial") == volume.replace("-", ""):
                    return f"/dev/{entry.name}"
                continue
            partitions = [p for p in entry.iterdir() if p.name.startswith(entry.name + "p")]
            in_use = partitions or any((entry / "holders").glob("*"))
            if not in_use and self._mount_point_of(f"/dev/{entry.name}") is None:
                candidates.append(f"/dev/{entry.name}")
        return candidates[0] if len(candidates) == 1 else None

    def state_volume(self, timeout: float = 900.0, poll: float = 5.0) -> str:
        """The stack attaches the volume after the instance exists: wait for it."""
        spec = self.config()["state_volume"]
        mount, state_dir = str(spec["mount"]), str(spec["state_dir"])
        waited = 0.0
        device = self.state_volume_device()
        while device is None:
            if waited >= timeout:
                raise AgentError("the Slurm state volume was not attached in time")
            self.sleep(poll)  # type: ignore[operator]
            waited += poll
            device = self.state_volume_device()
        if self.sh("blkid", device, check=False).returncode != 0:
            self.sh("mkfs.ext4", "-q", "-L", "slurm-state", device)
        uuid = self.sh("blkid", "-s", "UUID", "-o", "value", device).stdout.strip()
        self._fstab(f"UUID={uuid}", mount, "ext4", "defaults,noatime,nofail")
        if not self._mounted(mount):
            self._mkdir(mount)
            self.sh("mount", mount)
        self._mkdir(state_dir)
        uid, gid = self.owner("slurm")  # type: ignore[operator]
        os.chown(self.path(state_dir), uid, gid)
        os.chmod(self.path(state_dir), 0o700)
        return device

    # --- reap (head) --------------------------------------------------------------------

    def slurm_users(self) -> set[str]:
        """SlurmUser, by name and uid: who stamps the reasons slurmctld sets itself."""
        config = self._ok(*SCONTROL, "show", "config")
        match = re.search(r"^SlurmUser\s*=\s*([^\s(]+)(?:\((\d+)\))?", config, re.MULTILINE)
        if match is None:
            raise AgentError("`scontrol show config` names no SlurmUser")
        return {g for g in match.groups() if g}

    def slurm_nodes(self) -> list[dict[str, str]]:
        """Every node record, from `scontrol show node` in one-line form."""
        out = self._ok(*SCONTROL, "--all", "--oneliner", "show", "node")
        return [parse_node_line(line) for line in out.splitlines() if line.startswith("NodeName=")]

    def live_instances(
        self, cluster: str, pools: list[dict[str, str]]
    ) -> tuple[set[str], set[str]]:
        """(Slurm names, private addresses) of the cluster's instances that still exist: one
        paginated DescribeInstances filtered by the cluster tag."""
        prefixes = {p["name"]: p["node_name_prefix"] for p in pools}
        names: set[str] = set()
        addresses: set[str] = set()
        filters = [
            {"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster]},
            {"Name": "instance-state-name", "Values": list(LIVE_INSTANCE_STATES)},
        ]
        pages = self.client("ec2").get_paginator("describe_instances").paginate(Filters=filters)
        for page in pages:
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    address = instance.get("PrivateIpAddress")
                    if not address:
                        continue
                    addresses.add(address)
                    tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
                    if tags.get(POOL_TAG) in prefixes:
                        names.add(node_name(prefixes[tags[POOL_TAG]], address))
        return names, addresses

    def reap(
        self, grace: float = REAP_GRACE_SECONDS, ec2: bool = True, dry_run: bool = False
    ) -> dict[str, Any]:
        """Delete the records of dead dynamic nodes of the cluster's pools (reap_verdict says
        which); with ``ec2``, keep any whose name or address a live instance of the cluster
        still has. Returns what was deleted, what failed, and why DOWN records were kept."""
        config = self.config()
        pools = list(config.get("pools") or [])
        users = self.slurm_users()
        now = float(self.clock())  # type: ignore[operator]
        chosen: list[dict[str, str]] = []
        kept: dict[str, str] = {}
        for node in self.slurm_nodes():
            verdict = reap_verdict(node, pools, users, now, grace)
            if verdict is None:
                chosen.append(node)
            elif _looks_down(node) and _pool_of(node.get("NodeName", ""), pools) is not None:
                kept[node["NodeName"]] = verdict
        if chosen and ec2:
            try:
                names, addresses = self.live_instances(str(config["cluster"]), pools)
            except Exception as exc:  # botocore's errors: delete nothing unconfirmed
                raise AgentError(f"cannot list the cluster's instances: {exc}") from exc
            for node in list(chosen):
                if node["NodeName"] in names or node.get("NodeAddr") in addresses:
                    kept[node["NodeName"]] = "an instance of the cluster still has its address"
                    chosen.remove(node)
        for name, why in sorted(kept.items()):
            log(f"reap: keeping {name}: {why}")
        result: dict[str, Any] = {"deleted": [], "failed": {}, "kept": dict(sorted(kept.items()))}
        if dry_run:
            result["would_delete"] = [n["NodeName"] for n in chosen]
            return result
        for node in chosen:
            name = node["NodeName"]
            done = self.sh(*SCONTROL, "delete", f"nodename={name}", check=False)
            if done.returncode == 0:
                log(f"reap: deleted {name} ({node.get('State')}, {node.get('Reason')})")
                result["deleted"].append(name)
            else:
                detail = (done.stderr or done.stdout or "").strip()
                log(f"reap: scontrol delete nodename={name} failed: {detail}")
                result["failed"][name] = detail
        return result


def _read_strip(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


def _count(directory: Path, pattern: str) -> int:
    regex = re.compile(pattern + "$")
    if not directory.is_dir():
        return 0
    return sum(1 for entry in directory.iterdir() if regex.match(entry.name))


def _restart_keys(slurm_conf: str) -> dict[str, str]:
    out = {}
    for line in slurm_conf.splitlines():
        key, _, value = line.split("#", 1)[0].partition("=")
        if key.strip() in RESTART_KEYS:
            out[key.strip()] = value.strip()
    return out


def parse_version(text: str) -> tuple[int, ...] | None:
    """(2, 13, 0) from a module version such as "2.13.0g"."""
    numbers = re.findall(r"\d+", text.strip().split("-")[0])
    return tuple(int(n) for n in numbers) if numbers else None


def pick_efa_devices(devices: list[str], count: int) -> list[str]:
    """``count`` of the sorted EFA devices, spread over the list. AWS's documented choices:
    on a p5 (32 devices, 8 wanted) every fourth device, one per PCI switch; for two, the
    first and the last; for one, the first."""
    if count >= len(devices):
        return list(devices)
    if count <= 1:
        return devices[:count]
    if count == 2:
        return [devices[0], devices[-1]]
    return devices[:: len(devices) // count][:count]


def lnet_interfaces(net_show: str) -> dict[str, list[str]]:
    """Network type -> interface names, from `lnetctl net show` (YAML, read line by line so
    the agent needs no YAML library). "tcp0" counts as "tcp"."""
    nets: dict[str, list[str]] = {}
    current = None
    in_interfaces = False
    for line in net_show.splitlines():
        text = line.strip().lstrip("- ").strip()
        if text.startswith("net type:"):
            current = re.sub(r"^(tcp|efa)0$", r"\1", text.split(":", 1)[1].strip())
            nets.setdefault(current, [])
            in_interfaces = False
        elif text.startswith("interfaces:"):
            in_interfaces = True
        elif in_interfaces and current is not None and re.match(r"^\d+:\s*\S+$", text):
            nets[current].append(text.split(":", 1)[1].strip())
        else:
            in_interfaces = False
    return nets


def prefers_efa(udsp_show: str) -> bool:
    """Whether `lnetctl udsp show` lists a rule with source efa."""
    return re.search(r"\bsrc:\s*efa\b", udsp_show) is not None


# --- node records (reap) ---------------------------------------------------------------

# A key of `scontrol show node -o`: a word followed by "=", at the start or after a blank
# (values such as CfgTRES=cpu=64,mem=... hold "=" too, never after a blank).
_NODE_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_]*)=")
# "Reason=<text> [<user>@<time>]": slurmctld stamps a reason with who set it and when.
_REASON = re.compile(r"^(?P<text>.*?) \[(?P<user>[^\s@\]]+)@(?P<time>[^\s\]]+)\](?=\s|$)")
# Keys that may follow Reason on the line (Slurm 23.11 and later).
_AFTER_REASON = re.compile(r" (?:Comment|Extra|InstanceId|InstanceType|ReservationName)=")


def _key_values(text: str, into: dict[str, str]) -> None:
    """Key=value pairs of a one-line record; a value runs to the next key (OS=Linux 6.8.0 #1
    SMP ... holds blanks). The first occurrence of a key wins."""
    matches = list(_NODE_KEY.finditer(text))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        into.setdefault(match.group(1), text[match.end() : end].strip())


def parse_node_line(line: str) -> dict[str, str]:
    """One record of `scontrol show node -o` (Slurm 22.05 and 23.11) as a dict. Reason, free
    text set by whoever set it, is split off first: its stamp becomes ReasonUser and
    ReasonTime, and nothing in it can pass for another field."""
    fields: dict[str, str] = {}
    head, marker, tail = line.rstrip("\n").partition(" Reason=")
    _key_values(head, fields)
    if marker:
        stamped = _REASON.match(tail)
        if stamped:
            fields["Reason"] = stamped["text"]
            fields["ReasonUser"] = stamped["user"]
            fields["ReasonTime"] = stamped["time"]
            rest = tail[stamped.end() :]
        else:
            after = _AFTER_REASON.search(tail)
            fields["Reason"] = (tail[: after.start()] if after else tail).strip()
            rest = tail[after.start() :] if after else ""
        _key_values(rest, fields)
    return fields


def slurm_time(value: str | None) -> float | None:
    """Seconds since the epoch from a Slurm time (local time, as scontrol prints it), or None
    for None, Unknown and anything else."""
    try:
        return datetime.datetime.strptime(value or "", SLURM_TIME).timestamp()
    except ValueError:
        return None


def _pool_of(name: str, pools: list[dict[str, str]]) -> dict[str, str] | None:
    for pool in pools:
        prefix = pool["node_name_prefix"]
        index = name[len(prefix) :]
        if name.startswith(prefix) and index.isdigit() and int(index) <= 0xFFFF:
            return pool
    return None


def _looks_down(node: dict[str, str]) -> bool:
    state = node.get("State", "").split("+")
    return state[0] == "DOWN" or "NOT_RESPONDING" in state[1:] or "DRAIN" in state[1:]


def reap_verdict(
    node: dict[str, str],
    pools: list[dict[str, str]],
    slurm_users: set[str],
    now: float,
    grace: float,
) -> str | None:
    """None when the record may be deleted, else why it stays. Deleted only: a dynamic node
    (DYNAMIC_NORM) named and featured as a node of one of the pools, DOWN and not responding,
    with no flag outside REAPABLE_FLAGS, nothing allocated, a reason stamped by SlurmUser
    (slurmctld's own "Not responding", or a drain Slurm itself set: an operator's reason stays
    for the operator), and DOWN for at least ``grace`` seconds. The DOWN time is the reason's
    stamp, which slurmctld sets when it marks the node DOWN; LastBusyTime and SlurmdStartTime
    count when later, so an older reason cannot shorten the grace."""
    name = node.get("NodeName", "")
    pool = _pool_of(name, pools)
    if pool is None:
        return "not a node of this cluster's pools"
    if pool["feature"] not in node.get("AvailableFeatures", "").split(","):
        return f"lacks the feature of pool {pool['name']}"
    base, *flags = node.get("State", "").split("+")
    if "DYNAMIC_NORM" not in flags:
        return "not a dynamic node"
    if base != "DOWN":
        return f"{base}, not DOWN"
    if "NOT_RESPONDING" not in flags:
        return "DOWN but slurmd responds"
    others = sorted(set(flags) - REAPABLE_FLAGS)
    if others:
        return f"state flags {'+'.join(others)}"
    if node.get("CPUAlloc", "0") != "0" or node.get("AllocTRES", ""):
        return "resources still allocated"
    user = node.get("ReasonUser")
    if user is None:
        return "its reason carries no stamp"
    if user not in slurm_users:
        return f"reason set by {user}, not by Slurm: left for the operator"
    times = [slurm_time(node.get(k)) for k in ("ReasonTime", "LastBusyTime", "SlurmdStartTime")]
    known = [t for t in times if t is not None]
    if not known:
        return "no time to measure the grace period from"
    down_for = now - max(known)
    if down_for < grace:
        return f"DOWN for {int(down_for)} s, less than the grace period ({int(grace)} s)"
    return None


def main(argv: list[str] | None = None, node: Node | None = None) -> int:
    parser = argparse.ArgumentParser(prog="slurmstack-node", description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.environ.get("SLURMSTACK_ROOT", "/"))
    sub = parser.add_subparsers(dest="command", required=True)
    for name in (
        "sync-config",
        "params",
        "munge-key",
        "health",
        "scratch",
        "mounts",
        "lnet-efa",
        "state-volume",
    ):
        sub.add_parser(name)
    reap = sub.add_parser("reap", help="delete the records of dead dynamic nodes (head node)")
    reap.add_argument(
        "--grace",
        type=float,
        default=REAP_GRACE_SECONDS,
        help="seconds a node must have been DOWN (default %(default)s)",
    )
    reap.add_argument("--dry-run", action="store_true", help="print what would be deleted")
    reap.add_argument(
        "--no-ec2", action="store_true", help="skip the check against the cluster's instances"
    )
    args = parser.parse_args(argv)
    node = node or Node(root=args.root)
    try:
        if args.command == "sync-config":
            print(json.dumps({"changed": node.sync_config()}))
        elif args.command == "params":
            node.params()
        elif args.command == "munge-key":
            node.munge_key()
        elif args.command == "health":
            if node.health():
                return 1
        elif args.command == "scratch":
            node.scratch()
        elif args.command == "mounts":
            node.mounts()
        elif args.command == "lnet-efa":
            node.lnet_efa()
        elif args.command == "state-volume":
            node.state_volume()
        elif args.command == "reap":
            result = node.reap(grace=args.grace, ec2=not args.no_ec2, dry_run=args.dry_run)
            print(json.dumps(result, sort_keys=True))
            if result["failed"]:
                return 1
    except AgentError as exc:
        log(f"{args.command}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
