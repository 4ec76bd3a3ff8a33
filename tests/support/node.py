"""What the agent's tests share: the example plan, a command runner that answers like a node,
fake device trees, and an agent Context rooted in the test's directory."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Any

from slurmstack.contract import (
    BOOTSTRAP_ENV_PATH,
    NODE_CONFIG_PATH,
    BootstrapEnv,
    DeployParameter,
    LogSource,
    NodeConfig,
    bootstrap_env_text,
    dump_document,
    log_group_name,
)
from slurmstack.node.boot import config_sync, scratch
from slurmstack.node.context import Context
from slurmstack.plan import ClusterPlan
from slurmstack.render import config_store
from support.examples import example_plan

REGION = "us-east-1"


PLAN = example_plan("p5-training")


PREFIX = PLAN.parameter_prefix


BUCKET = "llm-train-bucket"

INSTANCE_ID = "i-0123456789abcdef0"


class Runner:
    """Records commands; answers like a node would."""

    def __init__(self, fail: set[str] | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail = fail or set()

    def __call__(self, cmd: list[str], check: bool = True):
        import subprocess

        self.calls.append(cmd)
        code = 1 if cmd[0] in self.fail else 0
        out = "uuid-1234\n" if cmd[:2] == ["blkid", "-s"] else ""
        if code and check:
            raise subprocess.CalledProcessError(code, cmd)
        return subprocess.CompletedProcess(cmd, code, out, "")


def me(_name: str) -> tuple[int, int]:
    return os.getuid(), os.getgid()


def publish_config(session, role: str) -> None:
    ssm = session.client("ssm")
    s3 = session.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    store = config_store(PLAN)
    for key, text in store.objects.items():
        s3.put_object(Bucket=BUCKET, Key=key, Body=text.encode())
    ssm.put_parameter(Name=PLAN.parameter(DeployParameter.BUCKET), Value=BUCKET, Type="String")
    s3.put_object(Bucket=BUCKET, Key=store.manifest_key, Body=store.manifest_json().encode())
    ssm.put_parameter(
        Name=PLAN.parameter(DeployParameter.CONFIG_MANIFEST),
        Value=store.manifest_key,
        Type="String",
    )


def tamper(session, role: str, path: str, body: bytes) -> None:
    """Replace, in the store, the bundle of ``role`` that carries ``path`` by one where ``path``
    holds ``body``, under the bundle's old key (so its hash no longer matches)."""
    from slurmstack.contract import bundle_text, read_bundle

    s3 = session.client("s3")
    store = config_store(PLAN)
    for key in store.bundles[role]:
        files = read_bundle(store.objects[key].encode())
        if path in files:
            text = {p: b.decode() for p, b in files.items()} | {path: body.decode()}
            s3.put_object(Bucket=BUCKET, Key=key, Body=bundle_text(text).encode())
            return
    raise KeyError(path)


def make_node(tmp_path: Path, session, role: str, run=None, imds=None) -> Context:
    env = tmp_path / "etc/slurmstack/bootstrap.env"
    env.parent.mkdir(parents=True, exist_ok=True)
    env.write_text(
        f"SLURMSTACK_CLUSTER={PLAN.name}\nSLURMSTACK_REGION={REGION}\nSLURMSTACK_ROLE={role}\n"
        f"SLURMSTACK_PARAMETER_PREFIX={PREFIX}\nSLURMSTACK_MUNGE_SECRET={PLAN.munge_secret_name}\n"
        f"SLURMSTACK_MANIFEST_PARAMETER={PLAN.parameter(DeployParameter.CONFIG_MANIFEST)}\n"
        f"SLURMSTACK_BUCKET_PARAMETER={PLAN.parameter(DeployParameter.BUCKET)}\n"
    )
    metadata = {"local-ipv4": "10.42.7.19", "instance-id": "i-0123456789abcdef0"}
    return Context(
        root=tmp_path,
        session=session,
        imds=imds or metadata.__getitem__,
        run=run or Runner(),
        sleep=lambda _s: None,
        owner=me,
    )


def fake_devices(root: Path, gpus: int, efa: int) -> None:
    (root / "dev").mkdir(exist_ok=True)
    for i in range(gpus):
        (root / "dev" / f"nvidia{i}").touch()
    (root / "dev" / "nvidiactl").touch()  # not a GPU
    ib = root / "sys/class/infiniband"
    ib.mkdir(parents=True, exist_ok=True)
    for i in range(efa):
        (ib / f"rdmap{i}s0").mkdir()


NODE_ADDRESS = "10.42.7.19"


PRIMARY_INTERFACE = "enp71s0"


# A p5.48xlarge's 32 EFA devices: 8 PCI switches of 4 consecutive buses each.
P5_EFA_DEVICES = [f"rdmap{start + i}s0" for start in range(79, 199, 17) for i in range(4)]


# AWS's p5 choice (every fourth device of the sorted list, one per PCI switch); the same
# eight devices as the p5 example of AWS's guidance, in sorted-name order.
P5_LUSTRE_EFA = [
    "rdmap113s0",
    "rdmap130s0",
    "rdmap147s0",
    "rdmap164s0",
    "rdmap181s0",
    "rdmap198s0",
    "rdmap79s0",
    "rdmap96s0",
]


def fake_efa_devices(root: Path, names: list[str], driver: str = "efa") -> None:
    """/sys/class/infiniband/<name>/device/driver -> .../drivers/<driver>, as on a node."""
    target = root / "sys/bus/pci/drivers" / driver
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        device = root / "sys/class/infiniband" / name / "device"
        device.mkdir(parents=True)
        (device / "driver").symlink_to(target)


class LnetRunner(Runner):
    """A node with the EFA driver and the Lustre client: answers modinfo and ip, and keeps
    LNet's networks and selection rules as lnetctl would."""

    def __init__(
        self, efa_version: str = "2.13.0g", kefalnd: bool = True, fail: set[str] | None = None
    ) -> None:
        super().__init__(fail)
        self.efa_version = efa_version
        self.kefalnd = kefalnd
        self.nets: dict[str, list[str]] = {}
        self.udsp: list[str] = []
        self.fail_next: list[list[str]] = []  # commands that fail once

    def __call__(self, cmd: list[str], check: bool = True):
        import subprocess

        if cmd in self.fail_next:
            self.fail_next.remove(cmd)
            self.calls.append(cmd)
            return subprocess.CompletedProcess(cmd, 1, "", "Resource temporarily unavailable")
        out, code = "", 0
        if cmd[:3] == ["modinfo", "-F", "version"]:
            out, code = (self.efa_version + "\n", 0) if self.efa_version else ("", 1)
        elif cmd[:3] == ["modinfo", "-F", "filename"]:
            code = 0 if self.kefalnd else 1
        elif cmd[:2] == ["ip", "-o"]:
            out = (
                "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n"
                f"2: {PRIMARY_INTERFACE}    inet {NODE_ADDRESS}/17 metric 1024 brd 10.42.127.255 "
                f"scope global dynamic {PRIMARY_INTERFACE}\\       valid_lft 3300sec\n"
            )
        elif cmd[:3] == ["lnetctl", "net", "show"]:
            out = self.net_show()
        elif cmd[:3] == ["lnetctl", "net", "add"]:
            self.nets.setdefault(cmd[4], []).append(cmd[6])
        elif cmd[:3] == ["lnetctl", "net", "del"]:
            self.nets.pop(cmd[4], None)
        elif cmd[:3] == ["lnetctl", "udsp", "show"]:
            out = "".join(f"- udsp:\n    idx: {i}\n    src: {s}\n" for i, s in enumerate(self.udsp))
        elif cmd[:3] == ["lnetctl", "udsp", "add"]:
            self.udsp.append(cmd[4])
        if code:
            self.calls.append(cmd)
            return subprocess.CompletedProcess(cmd, code, out, "")
        result = super().__call__(cmd, check)
        return subprocess.CompletedProcess(cmd, result.returncode, out or result.stdout, "")

    def net_show(self) -> str:
        lines = ["net:", "    - net type: lo", "      local NI(s):", "        - nid: 0@lo"]
        lines.append("          status: up")
        for net, interfaces in self.nets.items():
            lines += [f"    - net type: {net}", "      local NI(s):"]
            for n, interface in enumerate(interfaces):
                nid = f"{NODE_ADDRESS}@tcp" if net == "tcp" else f"1.{n}.0.0@efa"
                lines += [f"        - nid: {nid}", "          status: up", "          interfaces:"]
                lines.append(f"              0: {interface}")
        return "\n".join(lines) + "\n"


def lnet_node(tmp_path: Path, aws, run, role: str = "train") -> Context:
    """A node of ``role`` of the p5 example after sync-config and params."""
    publish_config(aws, role)
    node = make_node(tmp_path, aws, role, run=run)
    config_sync.sync_config(node, poll=0)
    (tmp_path / "etc/slurmstack/node.env").write_text(f"SLURMSTACK_ADDRESS={NODE_ADDRESS}\n")
    return node


LNET_SETUP = [
    ["modinfo", "-F", "version", "efa"],
    ["modinfo", "-F", "filename", "kefalnd"],
    ["ip", "-o", "-4", "addr", "show"],
    ["modprobe", "lnet"],
    ["modprobe", "kefalnd", f"ipif_name={PRIMARY_INTERFACE}"],
    ["modprobe", "ksocklnd"],
    ["lnetctl", "lnet", "configure"],
    ["lnetctl", "net", "show"],
]


def asg_with_instance(session) -> str:
    ec2 = session.client("ec2")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    session.client("autoscaling").create_launch_configuration(
        LaunchConfigurationName="lc", ImageId=image, InstanceType="t3.micro"
    )
    asg = session.client("autoscaling")
    asg.create_auto_scaling_group(
        AutoScalingGroupName="llm-train-pool-train",
        LaunchConfigurationName="lc",
        MinSize=1,
        MaxSize=1,
        DesiredCapacity=1,
        AvailabilityZones=["us-east-1a"],
    )
    group = asg.describe_auto_scaling_groups()["AutoScalingGroups"][0]
    return str(group["Instances"][0]["InstanceId"])


class Unformatted(Runner):
    """Disks without a file system yet: `blkid DEVICE` finds none; after mkfs the file
    system's UUID is read."""

    def __call__(self, cmd: list[str], check: bool = True):
        if cmd[0] == "blkid" and cmd[1] != "-s":
            self.calls.append(cmd)
            return subprocess.CompletedProcess(cmd, 2, "", "")
        return super().__call__(cmd, check)


def fake_disks(root: Path, models: list[str], holders: dict[str, str] | None = None) -> None:
    for i, model in enumerate(models):
        dev = root / "sys/block" / f"nvme{i}n1"
        (dev / "device").mkdir(parents=True)
        (dev / "device/model").write_text(model + "  \n")
        (dev / "holders").mkdir()
        if holders and f"nvme{i}n1" in holders:
            (dev / "holders" / holders[f"nvme{i}n1"]).mkdir()


def scratch_node(tmp_path, aws, run) -> Context:
    publish_config(aws, "train")
    node = make_node(tmp_path, aws, "train", run=run)
    config_sync.sync_config(node, poll=0)
    return node


# Slurm 22.05.8's own output (this machine's slurmctld, a dynamic node it marked DOWN after
# its slurmd stopped), with the name, address, times and reason stamp of a production node:
# OS holds blanks, AllocTRES is empty, Reason comes last.
LINE_2205 = (
    "NodeName=dev-1811 Arch=x86_64 CoresPerSocket=32  CPUAlloc=0 CPUEfctv=64 CPUTot=64 "
    "CPULoad=0.65 AvailableFeatures=dev ActiveFeatures=dev Gres=(null) NodeAddr=10.42.7.11 "
    "NodeHostName=dev-1811 Version=22.05.8 OS=Linux 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0  "
    "RealMemory=124519 AllocMem=0 FreeMem=22929 Sockets=1 Boards=1 "
    "State=DOWN+DYNAMIC_NORM+NOT_RESPONDING ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A "
    "MCS_label=N/A Partitions=dev  BootTime=2024-09-01T02:39:00 "
    "SlurmdStartTime=2024-09-01T03:40:03 LastBusyTime=2024-09-01T03:40:03 "
    "CfgTRES=cpu=64,mem=124519M,billing=64 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 "
    "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s "
    "Reason=Not responding [slurm@2024-09-01T11:00:00]"
)


NOW = "2024-09-01T12:30:00"


def record(
    name: str,
    state: str,
    reason: str | None = "Not responding",
    by: str = "slurm",
    at: str = "2024-09-01T12:00:00",
    cpu_alloc: int = 0,
    alloc_tres: str = "",
    feature: str | None = None,
    started: str = "2024-09-01T10:02:00",
    busy: str = "2024-09-01T11:00:00",
    after: str = "",
) -> str:
    """One line of `scontrol show node -o` as Slurm 23.11 prints it (src/api/node_info.c)."""
    feature = feature or name.rsplit("-", 1)[0]
    line = (
        f"NodeName={name} Arch=x86_64 CoresPerSocket=48 CPUAlloc={cpu_alloc} CPUEfctv=192 "
        f"CPUTot=192 CPULoad=0.00 AvailableFeatures={feature} ActiveFeatures={feature} "
        "Gres=gpu:h100:8(S:0-1) NodeAddr=10.42.7.19 NodeHostName=ip-10-42-7-19 Version=23.11.4 "
        "OS=Linux 6.8.0-1015-aws #16-Ubuntu SMP Mon Aug 19 19:38:17 UTC 2024 "
        "RealMemory=2000000 AllocMem=0 FreeMem=N/A Sockets=2 Boards=1 "
        f"State={state} ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A "
        f"Partitions={feature} BootTime=2024-09-01T10:00:00 SlurmdStartTime={started} "
        f"LastBusyTime={busy} ResumeAfterTime=None "
        "CfgTRES=cpu=192,mem=2000000M,billing=192,gres/gpu=8 "
        f"AllocTRES={alloc_tres} CurrentWatts=0 AveWatts=0"
    )
    if reason is not None:
        line += f" Reason={reason} [{by}@{at}]"
    return line + after


SHOW_CONFIG = (
    "Configuration data as of 2024-09-01T12:30:00\n"
    "SlurmUser               = slurm(64030)\n"
    "SlurmdTimeout           = 300 sec\n"
)


STORE = scratch.INSTANCE_STORE_MODEL


class NoAws:
    """A session whose every client fails, as on a node without credentials or network."""

    def client(self, *_args, **_kwargs):
        raise RuntimeError("Unable to locate credentials")


# --- health checks ------------------------------------------------------------------------

ACCOUNT = "123456789012"
INSTANCE = "i-0123456789abcdef0"


def identity(instance: str = INSTANCE) -> str:
    """The metadata service's instance identity document (the fields ship-logs reads)."""
    import json

    return json.dumps({"accountId": ACCOUNT, "region": REGION, "instanceId": instance})


class Answers(Runner):
    """A node whose commands answer as scripted: ``answers`` maps a command's first words (the
    `timeout -k 5 N` prefix of a bounded command dropped) to (exit status, stdout); anything
    else succeeds with no output. Commands it was given are in ``calls``, unprefixed."""

    def __init__(self, answers: dict[tuple[str, ...], tuple[int, str]] | None = None) -> None:
        super().__init__()
        self.answers = dict(answers or {})

    def __call__(self, cmd: list[str], check: bool = True):
        import subprocess

        words = cmd[4:] if cmd[:2] == ["timeout", "-k"] else cmd
        self.calls.append(words)
        for prefix, (code, out) in sorted(self.answers.items(), key=lambda a: -len(a[0])):
            if tuple(words[: len(prefix)]) == prefix:
                if code and check:
                    raise subprocess.CalledProcessError(code, cmd)
                return subprocess.CompletedProcess(cmd, code, out, "")
        return subprocess.CompletedProcess(cmd, 0, "", "")


def nvidia_smi(gpus: int, broken: dict[int, str] | None = None) -> str:
    """`nvidia-smi --query-gpu=index,pci.bus_id,ecc...,retired_pages.pending` of healthy GPUs,
    with the fields of ``broken`` GPUs replaced."""
    broken = broken or {}
    rows = []
    for i in range(gpus):
        rows.append(broken.get(i, f"{i}, 00000000:{16 + i:02X}:00.0, 0, [N/A]"))
    return "\n".join(rows) + "\n"


def mounted_everything(root: Path, paths: list[str]) -> None:
    """/proc/mounts listing ``paths``, as on a node whose mounts step ran."""
    proc = root / "proc"
    proc.mkdir(exist_ok=True)
    lines = [f"fs{i} {p} nfs4 rw 0 0" for i, p in enumerate(paths)]
    (proc / "mounts").write_text("\n".join(lines) + "\n")


def efa_ports(root: Path, states: list[str]) -> None:
    """/sys/class/infiniband/rdmap<i>s0/ports/1/state, one device per state."""
    for i, state in enumerate(states):
        port = root / f"sys/class/infiniband/rdmap{i}s0/ports/1"
        port.mkdir(parents=True, exist_ok=True)
        (port / "state").write_text(f"{state}\n")


def kernel_log(root: Path, *messages: str, first: int = 1) -> None:
    """/dev/kmsg as a regular file in its format, one record per message."""
    dev = root / "dev"
    dev.mkdir(exist_ok=True)
    lines = [f"4,{first + i},{1000 * (first + i)},-;{m}" for i, m in enumerate(messages)]
    with (dev / "kmsg").open("a") as handle:
        handle.write("".join(line + "\n" for line in lines))


def shipping_node(tmp_path: Path, aws: Any, plan: ClusterPlan, config: NodeConfig) -> Context:
    """An agent Context for a node whose ``node.json`` is ``config``: its bootstrap
    environment written, the instance answering the metadata service, and every log group of
    ``plan`` made in the (moto) account ``aws``, as the stack makes them."""
    ctx = Context(root=tmp_path, session=aws, imds={"instance-id": INSTANCE_ID}.__getitem__)
    ctx.path(NODE_CONFIG_PATH).parent.mkdir(parents=True, exist_ok=True)
    ctx.path(NODE_CONFIG_PATH).write_text(dump_document(config))
    env = BootstrapEnv(plan.name, plan.region, config.role, plan.parameter_prefix, "m", "p", "b")
    ctx.path(BOOTSTRAP_ENV_PATH).write_text(bootstrap_env_text(env))
    logs = aws.client("logs", region_name=plan.region)
    for source in LogSource:
        with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
            logs.create_log_group(logGroupName=log_group_name(plan.name, source))
    return ctx
