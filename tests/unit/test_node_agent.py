"""The node agent (the package slurmstack/node) and its bootstrap against moto's in-process AWS,
with the node's filesystem rooted in tmp_path so device trees are fakes made by the test."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from helpers_examples import example_plan
from slurmstack.node import (
    base,
    bootstrap,
    cli,
    config_sync,
    lnet,
    params,
    reaper,
    scratch,
    slurm_records,
    state_volume,
)
from slurmstack.node.node import Node
from slurmstack.plan import DeployParameter
from slurmstack.render import (
    AGENT_DIR,
    AGENT_LIB_DIR,
    AGENT_PATH,
    agent_modules,
    config_store,
    role_files,
)

REGION = "us-east-1"
PLAN = example_plan("p5-training")
PREFIX = PLAN.parameter_prefix
BUCKET = "llm-train-bucket"


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


@pytest.fixture
def aws():
    with mock_aws():
        session = boto3.session.Session(region_name=REGION)
        yield session


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


def make_node(tmp_path: Path, session, role: str, run=None, imds=None) -> Node:
    env = tmp_path / "etc/slurmstack/bootstrap.env"
    env.parent.mkdir(parents=True, exist_ok=True)
    env.write_text(
        f"SLURMSTACK_CLUSTER={PLAN.name}\nSLURMSTACK_REGION={REGION}\nSLURMSTACK_ROLE={role}\n"
        f"SLURMSTACK_PARAMETER_PREFIX={PREFIX}\nSLURMSTACK_MUNGE_SECRET={PLAN.munge_secret_name}\n"
        f"SLURMSTACK_MANIFEST_PARAMETER={PLAN.parameter(DeployParameter.CONFIG_MANIFEST)}\n"
        f"SLURMSTACK_BUCKET_PARAMETER={PLAN.parameter(DeployParameter.BUCKET)}\n"
    )
    metadata = {"local-ipv4": "10.42.7.19", "instance-id": "i-0123456789abcdef0"}
    return Node(
        root=tmp_path,
        session=session,
        imds=imds or metadata.__getitem__,
        run=run or Runner(),
        sleep=lambda _s: None,
        owner=me,
    )


def test_parameter_keys_match_the_plan() -> None:
    assert DeployParameter.HEAD_ADDRESS.value == base.PARAM_HEAD_ADDRESS
    assert DeployParameter.BUCKET.value == base.PARAM_BUCKET
    assert DeployParameter.LUSTRE_DNS.value == base.PARAM_LUSTRE_DNS
    assert DeployParameter.LUSTRE_MOUNT_NAME.value == base.PARAM_LUSTRE_MOUNT_NAME
    assert DeployParameter.EFS_ID.value == base.PARAM_EFS_ID
    assert DeployParameter.CONFIG_MANIFEST.value == base.PARAM_CONFIG_MANIFEST
    assert DeployParameter.STATE_VOLUME_ID.value == base.PARAM_STATE_VOLUME_ID


def test_node_name_is_pool_and_low_16_bits_of_the_address() -> None:
    assert base.node_name("train-", "10.42.7.19") == f"train-{7 * 256 + 19}"
    assert base.node_name("train-", "10.43.255.255") == "train-65535"


def test_bootstrap_installs_the_agent_from_the_store(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    node = make_node(tmp_path, aws, "train")
    target = bootstrap.install(node.bootstrap_env(), aws, root=str(tmp_path), poll=0)
    assert target == str(tmp_path / AGENT_PATH.lstrip("/"))
    agent = {p: t for p, t in role_files(PLAN, "train").items() if p.startswith("/usr/local/")}
    assert sorted(agent) == sorted(
        [AGENT_PATH] + [f"{AGENT_DIR}/{m.name}" for m in agent_modules()]
    )
    assert AGENT_DIR + "/" == bootstrap.AGENT_DIR
    for path, text in agent.items():
        installed = tmp_path / path.lstrip("/")
        assert installed.read_text() == text
        assert os.stat(installed).st_mode & 0o777 == (0o755 if path == AGENT_PATH else 0o644)
    for module in agent_modules():
        assert agent[f"{AGENT_DIR}/{module.name}"] == module.read_text()
    # The launcher runs the installed package (pointed at tmp_path's copy of the library).
    launcher = Path(target).read_text().replace(AGENT_LIB_DIR, str(tmp_path / AGENT_LIB_DIR[1:]))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-I", "-c", launcher, "--help"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "slurmstack-node" in done.stdout and "state-volume" in done.stdout


@pytest.mark.parametrize("path", [AGENT_PATH, f"{AGENT_DIR}/base.py"])
def test_bootstrap_refuses_a_tampered_agent(aws, tmp_path: Path, path: str) -> None:
    publish_config(aws, "train")
    key = config_store(PLAN).manifest["train"][path]
    aws.client("s3").put_object(Bucket=BUCKET, Key=key, Body=b"evil")
    node = make_node(tmp_path, aws, "train")
    with pytest.raises(SystemExit, match="does not match"):
        bootstrap.install(node.bootstrap_env(), aws, root=str(tmp_path), poll=0)
    assert not (tmp_path / "usr/local").exists()


def test_sync_config_writes_the_role_files_then_reports_no_change(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    run = Runner()
    node = make_node(tmp_path, aws, "train", run=run)
    changed = node.sync_config(poll=0)
    expected = role_files(PLAN, "train")
    assert changed == sorted(expected)
    for path, text in expected.items():
        assert (tmp_path / path.lstrip("/")).read_text() == text
    assert os.stat(tmp_path / "etc/slurmstack/task-prolog.sh").st_mode & 0o777 == 0o755
    assert os.stat(tmp_path / "etc/nccl.conf").st_mode & 0o777 == 0o644
    assert ["systemctl", "daemon-reload"] in run.calls
    assert node.sync_config(poll=0) == []


def test_sync_config_rejects_an_object_that_does_not_match_its_hash(aws, tmp_path) -> None:
    publish_config(aws, "head")
    key = config_store(PLAN).manifest["head"]["/etc/slurm/slurm.conf"]
    aws.client("s3").put_object(Bucket=BUCKET, Key=key, Body=b"ClusterName=evil\n")
    node = make_node(tmp_path, aws, "head")
    with pytest.raises(base.AgentError, match="sha256"):
        node.sync_config(poll=0)
    assert not (tmp_path / "etc/slurm/slurm.conf").exists()


def test_sync_config_restarts_slurmctld_when_max_node_count_changes(aws, tmp_path) -> None:
    publish_config(aws, "head")
    old = tmp_path / "etc/slurm/slurm.conf"
    old.parent.mkdir(parents=True)
    old.write_text("MaxNodeCount=1\n")
    run = Runner()
    make_node(tmp_path, aws, "head", run=run).sync_config(poll=0)
    assert ["systemctl", "restart", "slurmctld"] in run.calls


def test_sync_config_refuses_a_manifest_that_does_not_match_its_key(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    store = config_store(PLAN)
    aws.client("s3").put_object(Bucket=BUCKET, Key=store.manifest_key, Body=b'{"train": {}}')
    with pytest.raises(base.AgentError, match="does not match its sha256"):
        make_node(tmp_path, aws, "train").sync_config(poll=0)


def test_sync_config_waits_for_the_manifest(aws, tmp_path: Path) -> None:
    node = make_node(tmp_path, aws, "train")
    with pytest.raises(base.AgentError, match="did not appear"):
        node.sync_config(timeout=30, poll=10)


def test_params_waits_for_deploy_values_and_names_the_node(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    run = Runner()
    node = make_node(tmp_path, aws, "train", run=run)
    node.sync_config(poll=0)
    ssm = aws.client("ssm")
    with pytest.raises(base.AgentError, match="head/address"):
        node.params(timeout=0, poll=0)
    for key, value in {
        DeployParameter.HEAD_ADDRESS: "10.42.0.10",
        DeployParameter.EFS_ID: "fs-0123456789abcdef0",
        DeployParameter.LUSTRE_DNS: "fs-1.fsx.us-east-1.amazonaws.com",
        DeployParameter.LUSTRE_MOUNT_NAME: "abcdefgh",
    }.items():
        ssm.put_parameter(Name=PLAN.parameter(key), Value=value, Type="String")
    env = node.params(poll=0)
    name = base.node_name("train-", "10.42.7.19")
    assert env["SLURMSTACK_NODE_NAME"] == name
    written = base.read_env_file(tmp_path / "etc/slurmstack/node.env")
    assert written["SLURMSTACK_HEAD_ADDRESS"] == "10.42.0.10"
    # File system names are the mounts' to wait for (the head's slurmctld does not wait).
    assert "SLURMSTACK_LUSTRE_MOUNT_NAME" not in written
    assert node.storage_env(poll=0)["SLURMSTACK_LUSTRE_MOUNT_NAME"] == "abcdefgh"
    written = base.read_env_file(tmp_path / "etc/slurmstack/node.env")
    assert written["SLURMSTACK_LUSTRE_MOUNT_NAME"] == "abcdefgh"
    assert written["SLURMSTACK_EFS_ID"] == "fs-0123456789abcdef0"
    hosts = (tmp_path / "etc/hosts").read_text()
    assert "10.42.0.10 llm-train-head" in hosts and f"10.42.7.19 {name}" in hosts
    assert ["hostnamectl", "set-hostname", name] in run.calls
    node.params(poll=0)  # idempotent: one slurmstack block in /etc/hosts
    assert (tmp_path / "etc/hosts").read_text().count(params.HOSTS_BEGIN) == 1
    # ... and keeps what mounts recorded.
    assert base.read_env_file(tmp_path / "etc/slurmstack/node.env") == written


def test_munge_key_comes_from_secrets_manager(aws, tmp_path: Path) -> None:
    key = os.urandom(1024)
    aws.client("secretsmanager").create_secret(Name=PLAN.munge_secret_name, SecretBinary=key)
    path = make_node(tmp_path, aws, "train").munge_key()
    assert path.read_bytes() == key
    assert os.stat(path).st_mode & 0o777 == 0o400


def test_munge_key_refuses_a_short_key(aws, tmp_path: Path) -> None:
    aws.client("secretsmanager").create_secret(Name=PLAN.munge_secret_name, SecretBinary=b"x")
    with pytest.raises(base.AgentError, match="at least 32"):
        make_node(tmp_path, aws, "train").munge_key()


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


def lnet_node(tmp_path: Path, aws, run, role: str = "train") -> Node:
    """A node of ``role`` of the p5 example after sync-config and params."""
    publish_config(aws, role)
    node = make_node(tmp_path, aws, role, run=run)
    node.sync_config(poll=0)
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


def test_lnet_efa_on_a_p5_node_runs_the_documented_commands(aws, tmp_path: Path) -> None:
    run = LnetRunner()
    node = lnet_node(tmp_path, aws, run)
    fake_efa_devices(tmp_path, P5_EFA_DEVICES)
    assert node.config()["lustre_efa_interfaces"] == 8
    run.calls.clear()
    assert node.lnet_efa(delay=0) == P5_LUSTRE_EFA
    assert run.calls == [
        *LNET_SETUP,
        ["lnetctl", "net", "add", "--net", "tcp", "--if", PRIMARY_INTERFACE],
        *(
            ["lnetctl", "net", "add", "--net", "efa", "--if", device, "--peer-credits", "32"]
            for device in P5_LUSTRE_EFA
        ),
        ["lnetctl", "set", "discovery", "1"],
        ["lnetctl", "udsp", "show"],
        ["lnetctl", "udsp", "add", "--src", "efa", "--priority", "0"],
        ["modprobe", "lustre"],
        ["lnetctl", "net", "show"],
    ]
    assert run.nets == {"tcp": [PRIMARY_INTERFACE], "efa": P5_LUSTRE_EFA}


def test_lnet_efa_again_adds_nothing(aws, tmp_path: Path) -> None:
    run = LnetRunner()
    node = lnet_node(tmp_path, aws, run)
    fake_efa_devices(tmp_path, P5_EFA_DEVICES)
    node.lnet_efa(delay=0)
    run.calls.clear()
    assert cli.main(["--root", str(tmp_path), "lnet-efa"], node=node) == 0
    assert run.calls == [
        *LNET_SETUP,
        ["lnetctl", "set", "discovery", "1"],
        ["lnetctl", "udsp", "show"],
        ["modprobe", "lustre"],
        ["lnetctl", "net", "show"],
    ]
    assert run.nets == {"tcp": [PRIMARY_INTERFACE], "efa": P5_LUSTRE_EFA}
    assert run.udsp == ["efa"]


def test_lnet_efa_replaces_a_tcp_network_on_another_interface(aws, tmp_path: Path) -> None:
    run = LnetRunner()
    run.nets["tcp"] = ["docker0"]
    node = lnet_node(tmp_path, aws, run)
    fake_efa_devices(tmp_path, P5_EFA_DEVICES)
    node.lnet_efa(delay=0)
    deleted = run.calls.index(["lnetctl", "net", "del", "--net", "tcp"])
    assert run.calls[deleted + 1] == ["lnetctl", "net", "add", "--net", "tcp", "--if", "enp71s0"]
    assert run.nets["tcp"] == [PRIMARY_INTERFACE]


def test_lnet_efa_retries_until_lnet_takes_the_interfaces(aws, tmp_path: Path) -> None:
    run = LnetRunner()
    node = lnet_node(tmp_path, aws, run)
    fake_efa_devices(tmp_path, P5_EFA_DEVICES)
    flaky = ["lnetctl", "net", "add", "--net", "efa", "--if", "rdmap147s0", "--peer-credits", "32"]
    run.fail_next = [flaky, list(flaky)]
    assert node.lnet_efa(attempts=3, delay=0) == P5_LUSTRE_EFA
    assert run.calls.count(flaky) == 3
    assert run.nets["efa"] == P5_LUSTRE_EFA  # each device once, whatever the retries
    with pytest.raises(base.AgentError, match="rdmap147s0"):
        run.nets.clear()
        run.fail_next = [flaky] * 2
        node.lnet_efa(attempts=2, delay=0)


@pytest.mark.parametrize(
    ("efa_version", "kefalnd", "problem"),
    [
        ("", True, "not installed"),
        ("2.10.0g", True, "older than 2.12.1"),
        ("2.13.0g", False, "kefalnd"),
    ],
)
def test_lnet_efa_refuses_a_node_without_the_efa_client(
    aws, tmp_path, efa_version, kefalnd, problem
) -> None:
    run = LnetRunner(efa_version=efa_version, kefalnd=kefalnd)
    node = lnet_node(tmp_path, aws, run)
    fake_efa_devices(tmp_path, P5_EFA_DEVICES)
    run.calls.clear()
    with pytest.raises(base.AgentError, match=problem):
        node.lnet_efa(delay=0)
    assert not any(c[0] in ("lnetctl", "modprobe") for c in run.calls)


def test_mounts_over_efa_configure_lnet_before_the_lustre_mount(aws, tmp_path: Path) -> None:
    run = LnetRunner()
    node = lnet_node(tmp_path, aws, run)
    fake_efa_devices(tmp_path, P5_EFA_DEVICES)
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin/mount.lustre").touch()
    (tmp_path / "sbin/mount.efs").touch()
    (tmp_path / "etc/slurmstack/node.env").write_text(
        "SLURMSTACK_EFS_ID=fs-0123\nSLURMSTACK_LUSTRE_DNS=fs-1.fsx.us-east-1.amazonaws.com\n"
        f"SLURMSTACK_LUSTRE_MOUNT_NAME=abcd\nSLURMSTACK_ADDRESS={NODE_ADDRESS}\n"
    )
    node.mounts(delay=0)
    udsp = run.calls.index(["lnetctl", "udsp", "add", "--src", "efa", "--priority", "0"])
    assert udsp < run.calls.index(["mount", "/fsx"])
    fstab = (tmp_path / "etc/fstab").read_text()
    assert (
        "fs-1.fsx.us-east-1.amazonaws.com@tcp:/abcd /fsx lustre noatime,flock,"
        "x-systemd.requires=slurmstack-lustre-efa.service,_netdev,nofail 0 0" in fstab
    )
    unit = (tmp_path / "etc/systemd/system/slurmstack-lustre-efa.service").read_text()
    assert "ExecStart=/usr/local/bin/slurmstack-node lnet-efa" in unit


def test_a_tcp_only_node_runs_no_lnet_commands(aws, tmp_path: Path) -> None:
    """p4d (Nitro v3) mounts Lustre over TCP: mount.lustre brings LNet up on its own."""
    plan = example_plan("p4d-odcr")
    run = LnetRunner()
    node = make_node(tmp_path, aws, "a100", run=run)
    files = role_files(plan, "a100")
    assert "/etc/systemd/system/slurmstack-lustre-efa.service" not in files
    config = tmp_path / "etc/slurmstack/node.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(files["/etc/slurmstack/node.json"])
    assert node.config()["lustre_efa_interfaces"] == 0
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin/mount.lustre").touch()
    (tmp_path / "sbin/mount.efs").touch()
    fake_efa_devices(tmp_path, [f"rdmap{n}s0" for n in range(4)])
    (tmp_path / "etc/slurmstack/node.env").write_text(
        "SLURMSTACK_EFS_ID=fs-0123\nSLURMSTACK_LUSTRE_DNS=fs-2.fsx.us-west-2.amazonaws.com\n"
        f"SLURMSTACK_LUSTRE_MOUNT_NAME=wxyz\nSLURMSTACK_ADDRESS={NODE_ADDRESS}\n"
    )
    assert node.lnet_efa(delay=0) == []
    assert node.mounts(delay=0) == ["/home", "/fsx"]
    assert run.calls == [["mount", "/home"], ["mount", "/fsx"]]
    fstab = (tmp_path / "etc/fstab").read_text()
    assert (
        "fs-2.fsx.us-west-2.amazonaws.com@tcp:/wxyz /fsx lustre noatime,flock,_netdev,nofail"
        in fstab
    )
    assert "x-systemd" not in fstab


def test_efa_devices_are_the_ones_the_efa_driver_owns(tmp_path: Path) -> None:
    fake_efa_devices(tmp_path, ["rdmap2s0", "rdmap10s0"])
    fake_efa_devices(tmp_path, ["mlx5_0"], driver="mlx5_core")
    (tmp_path / "sys/class/infiniband/stray").mkdir()
    assert Node(root=tmp_path).efa_devices() == ["rdmap10s0", "rdmap2s0"]


def test_efa_device_choice_follows_aws() -> None:
    assert lnet.pick_efa_devices(sorted(P5_EFA_DEVICES), 8) == P5_LUSTRE_EFA
    sixteen = [f"rdmap{n}s0" for n in range(100, 116)]  # p5en: 16 devices, 8 used
    assert lnet.pick_efa_devices(sixteen, 8) == sixteen[::2]
    assert lnet.pick_efa_devices(["a", "b", "c"], 2) == ["a", "c"]  # first and last
    assert lnet.pick_efa_devices(["a", "b"], 1) == ["a"]
    assert lnet.pick_efa_devices(["a"], 2) == ["a"]


def test_lnet_output_parsing() -> None:
    shown = LnetRunner()
    shown.nets = {"tcp": ["enp71s0"], "efa": ["rdmap79s0", "rdmap96s0"]}
    assert lnet.lnet_interfaces(shown.net_show()) == {
        "lo": [],
        "tcp": ["enp71s0"],
        "efa": ["rdmap79s0", "rdmap96s0"],
    }
    assert lnet.lnet_interfaces("net:\n    - net type: tcp0\n") == {"tcp": []}
    assert lnet.prefers_efa("- udsp:\n    idx: 0\n    src: efa\n    dst: NA\n")
    assert not lnet.prefers_efa("- udsp:\n    idx: 0\n    src: tcp\n")
    assert lnet.parse_version("2.13.0g\n") == (2, 13, 0)
    assert lnet.parse_version("") is None


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


def health_node(tmp_path, aws, instance: str) -> Node:
    publish_config(aws, "train")
    node = make_node(tmp_path, aws, "train", imds={"instance-id": instance}.__getitem__)
    node.sync_config(poll=0)
    return node


def test_health_passes_with_every_device(aws, tmp_path: Path) -> None:
    instance = asg_with_instance(aws)
    node = health_node(tmp_path, aws, instance)
    fake_devices(tmp_path, gpus=8, efa=32)
    assert node.health() == []
    status = aws.client("autoscaling").describe_auto_scaling_instances()
    assert status["AutoScalingInstances"][0]["HealthStatus"].upper() == "HEALTHY"


@pytest.mark.parametrize(("gpus", "efa", "problem"), [(7, 32, "GPU"), (8, 31, "EFA")])
def test_health_marks_the_instance_unhealthy(aws, tmp_path, gpus, efa, problem) -> None:
    instance = asg_with_instance(aws)
    node = health_node(tmp_path, aws, instance)
    fake_devices(tmp_path, gpus=gpus, efa=efa)
    problems = node.health()
    assert len(problems) == 1 and problem in problems[0]
    status = aws.client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance])
    assert status["AutoScalingInstances"][0]["HealthStatus"].upper() == "UNHEALTHY"
    assert cli.main(["--root", str(tmp_path), "health"], node=node) == 1


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


def scratch_node(tmp_path, aws, run) -> Node:
    publish_config(aws, "train")
    node = make_node(tmp_path, aws, "train", run=run)
    node.sync_config(poll=0)
    return node


def test_scratch_raid0_over_instance_store_disks_only(aws, tmp_path: Path) -> None:
    run = Unformatted()
    node = scratch_node(tmp_path, aws, run)
    store = scratch.INSTANCE_STORE_MODEL
    fake_disks(tmp_path, [state_volume.EBS_MODEL] + [store] * 8)
    assert node.scratch() == "/scratch"
    create = next(c for c in run.calls if c[0] == "mdadm")
    assert "--level=0" in create and "--raid-devices=8" in create
    assert "/dev/nvme0n1" not in create  # the root EBS volume
    assert ["mount", "-o", "noatime", scratch.SCRATCH_MD, "/scratch"] in run.calls
    assert any(c[0] == "mkfs.ext4" for c in run.calls)


def test_scratch_single_disk_needs_no_raid(aws, tmp_path: Path) -> None:
    run = Unformatted()
    node = scratch_node(tmp_path, aws, run)
    fake_disks(tmp_path, [state_volume.EBS_MODEL, scratch.INSTANCE_STORE_MODEL])
    node.scratch()
    assert not any(c[0] == "mdadm" for c in run.calls)
    assert ["mount", "-o", "noatime", "/dev/nvme1n1", "/scratch"] in run.calls


def test_scratch_reuses_disks_the_image_already_assembled(aws, tmp_path: Path) -> None:
    run = Runner()
    node = scratch_node(tmp_path, aws, run)
    store = scratch.INSTANCE_STORE_MODEL
    fake_disks(tmp_path, [state_volume.EBS_MODEL, store, store], holders={"nvme1n1": "md127"})
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/mounts").write_text("/dev/md127 /opt/dlami/nvme ext4 rw 0 0\n")
    node.scratch()
    assert ["mount", "--bind", "/opt/dlami/nvme", "/scratch"] in run.calls
    assert not any(c[0] in ("mdadm", "mkfs.ext4") for c in run.calls)


def test_mounts_retry_until_the_file_system_answers(aws, tmp_path: Path) -> None:
    class Flaky(LnetRunner):
        def __call__(self, cmd, check=True):
            if cmd == ["mount", "/home"] and sum(c == cmd for c in self.calls) < 2:
                self.calls.append(cmd)
                import subprocess

                return subprocess.CompletedProcess(cmd, 32, "", "no such host")
            return super().__call__(cmd, check)

    run = Flaky()
    node = scratch_node(tmp_path, aws, run)
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin/mount.lustre").touch()
    (tmp_path / "sbin/mount.efs").touch()
    fake_efa_devices(tmp_path, P5_EFA_DEVICES)
    (tmp_path / "etc/slurmstack/node.env").write_text(
        "SLURMSTACK_EFS_ID=fs-0123\nSLURMSTACK_LUSTRE_DNS=fs-1.fsx.us-east-1.amazonaws.com\n"
        f"SLURMSTACK_LUSTRE_MOUNT_NAME=abcd\nSLURMSTACK_ADDRESS={NODE_ADDRESS}\n"
    )
    assert node.mounts(delay=0) == ["/home", "/fsx"]
    assert run.calls.count(["mount", "/home"]) == 3
    fstab = (tmp_path / "etc/fstab").read_text()
    assert (
        # amazon-efs-utils' helper, with TLS in transit.
        "fs-0123:/ /home efs tls,_netdev,nofail 0 0" in fstab
    )
    assert "fs-1.fsx.us-east-1.amazonaws.com@tcp:/abcd /fsx lustre noatime,flock" in fstab


def test_mounts_refuse_an_image_without_the_client(aws, tmp_path: Path) -> None:
    """Nothing is installed at boot: a node whose image lacks a mount helper fails the step,
    naming what is missing, and runs no mount (and no apt)."""
    run = Runner()
    node = scratch_node(tmp_path, aws, run)
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin/mount.efs").touch()
    (tmp_path / "etc/slurmstack/node.env").write_text(
        "SLURMSTACK_EFS_ID=fs-1\nSLURMSTACK_LUSTRE_DNS=x\nSLURMSTACK_LUSTRE_MOUNT_NAME=y\n"
    )
    with pytest.raises(base.AgentError, match=r"mount\.lustre is missing: the image lacks"):
        node.mounts(attempts=1, delay=0)
    assert not any(c[0] in ("apt-get", "mount") and c[1:] == ["/fsx"] for c in run.calls)
    assert not any(c[0] == "apt-get" for c in run.calls)


def test_mounts_give_up_after_the_last_attempt(aws, tmp_path: Path) -> None:
    run = Runner(fail={"mount"})
    node = scratch_node(tmp_path, aws, run)
    (tmp_path / "etc/slurmstack/node.env").write_text("SLURMSTACK_EFS_ID=fs-1\n")
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin/mount.lustre").touch()
    (tmp_path / "sbin/mount.efs").touch()
    (tmp_path / "etc/slurmstack/node.env").write_text(
        "SLURMSTACK_EFS_ID=fs-1\nSLURMSTACK_LUSTRE_DNS=x\nSLURMSTACK_LUSTRE_MOUNT_NAME=y\n"
    )
    with pytest.raises(base.AgentError, match="failed 3 times"):
        node.mounts(attempts=3, delay=0)


def test_state_volume_found_by_volume_id(aws, tmp_path: Path) -> None:
    publish_config(aws, "head")
    aws.client("ssm").put_parameter(
        Name=PLAN.parameter(DeployParameter.STATE_VOLUME_ID), Value="vol-0abc", Type="String"
    )
    run = Runner(fail={"blkid"})

    class Blkid(Runner):
        def __call__(self, cmd, check=True):
            if cmd[:2] == ["blkid", "-s"]:
                self.calls.append(cmd)
                import subprocess

                return subprocess.CompletedProcess(cmd, 0, "uuid-1\n", "")
            return run(cmd, check) if cmd[0] != "blkid" else Runner(fail={"blkid"})(cmd, check)

    node = make_node(tmp_path, aws, "head", run=Blkid())
    node.sync_config(poll=0)
    fake_disks(tmp_path, [state_volume.EBS_MODEL, state_volume.EBS_MODEL])
    (tmp_path / "sys/block/nvme0n1/device/serial").write_text("vol0root\n")
    (tmp_path / "sys/block/nvme1n1/device/serial").write_text("vol0abc\n")
    assert node.state_volume(timeout=0) == "/dev/nvme1n1"
    assert ["mkfs.ext4", "-q", "-L", "slurm-state", "/dev/nvme1n1"] in run.calls
    assert "UUID=uuid-1 /var/spool/slurmctld ext4" in (tmp_path / "etc/fstab").read_text()
    assert (tmp_path / "var/spool/slurmctld/state").is_dir()


def test_state_volume_waits_then_gives_up(aws, tmp_path: Path) -> None:
    publish_config(aws, "head")
    node = make_node(tmp_path, aws, "head")
    node.sync_config(poll=0)
    with pytest.raises(base.AgentError, match="not attached"):
        node.state_volume(timeout=10, poll=5)


def test_agent_is_self_contained() -> None:
    """Standard library and boto3 only: it runs on nodes without slurmstack installed, its
    modules importing one another relatively (the package is node_agent there)."""
    import ast

    modules = {m.stem for m in agent_modules()}
    for path in [*agent_modules(), Path(bootstrap.__file__)]:
        tree = ast.parse(path.read_text())
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level:
                assert path.name != "bootstrap.py" and node.module in modules, path
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.split(".")[0])
        assert "slurmstack" not in names, path
        assert names <= set(sys.stdlib_module_names) | {"boto3", "__future__"}, path


def test_agent_modules_stay_small() -> None:
    for module in agent_modules():
        assert len(module.read_text().splitlines()) <= 300, module.name


def test_manifest_sha_keys_name_their_content() -> None:
    store = config_store(PLAN)
    for key, text in store.objects.items():
        assert key == "config/" + hashlib.sha256(text.encode()).hexdigest()
    assert json.loads(store.manifest_json()) == store.manifest


# --- reap (head) ------------------------------------------------------------------------

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


class Scontrol(Runner):
    """scontrol on the head node: `show config`, `show node` (these lines), `delete`."""

    def __init__(self, lines: list[str], refuse: set[str] | None = None) -> None:
        super().__init__()
        self.lines = lines
        self.refuse = refuse or set()

    def __call__(self, cmd: list[str], check: bool = True):
        import subprocess

        self.calls.append(cmd)
        if cmd[:3] != list(slurm_records.SCONTROL):
            return subprocess.CompletedProcess(cmd, 0, "", "")
        args = cmd[3:]
        if args == ["show", "config"]:
            return subprocess.CompletedProcess(cmd, 0, SHOW_CONFIG, "")
        if args[-2:] == ["show", "node"]:
            return subprocess.CompletedProcess(cmd, 0, "\n".join(self.lines) + "\n", "")
        if args[0] == "delete":
            name = args[1].removeprefix("nodename=")
            if name in self.refuse:
                return subprocess.CompletedProcess(cmd, 1, "", "Requested nodes are busy\n")
            return subprocess.CompletedProcess(cmd, 0, "", "")
        raise AssertionError(cmd)

    @property
    def deleted(self) -> list[str]:
        return [c[-1].removeprefix("nodename=") for c in self.calls if "delete" in c]


def head(tmp_path: Path, aws, lines: list[str], **kwargs) -> tuple[Node, Scontrol]:
    config = tmp_path / "etc/slurmstack/node.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(role_files(PLAN, "head")["/etc/slurmstack/node.json"])
    run = Scontrol(lines, **kwargs)
    node = make_node(tmp_path, aws, "head", run=run)
    node.clock = lambda: slurm_records.slurm_time(NOW)
    return node, run


def test_reaper_constants_match_the_plan_render_and_stack() -> None:
    from slurmstack.plan import REAPER_GRACE_SECONDS
    from slurmstack.render import REAPER_TIMER_PATH
    from slurmstack.stack.common import CLUSTER_TAG, POOL_TAG

    assert reaper.REAP_GRACE_SECONDS == REAPER_GRACE_SECONDS
    assert config_sync.REAPER_TIMER_PATH == REAPER_TIMER_PATH
    assert (reaper.CLUSTER_TAG, reaper.POOL_TAG) == (CLUSTER_TAG, POOL_TAG)


def test_parse_a_slurm_22_05_record() -> None:
    fields = slurm_records.parse_node_line(LINE_2205)
    assert fields["NodeName"] == "dev-1811"
    assert fields["State"] == "DOWN+DYNAMIC_NORM+NOT_RESPONDING"
    assert fields["OS"] == "Linux 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0"
    assert fields["CfgTRES"] == "cpu=64,mem=124519M,billing=64"
    assert fields["AllocTRES"] == ""
    assert fields["CPUAlloc"] == "0"
    assert fields["Reason"] == "Not responding"
    assert (fields["ReasonUser"], fields["ReasonTime"]) == ("slurm", "2024-09-01T11:00:00")
    assert slurm_records.slurm_time(fields["LastBusyTime"]) is not None
    assert slurm_records.slurm_time("None") is None and slurm_records.slurm_time(None) is None


def test_parse_a_slurm_23_11_record_whose_reason_looks_like_fields() -> None:
    """Whatever an operator writes in a reason cannot pass for a field, and the keys 23.11
    prints after Reason are still read."""
    line = record(
        "train-5",
        "IDLE+DRAIN+DYNAMIC_NORM",
        reason="bad HBM State=IDLE CPUAlloc=0 see [ticket 7]",
        by="root",
        after=" Comment=rma Extra=rack=12",
    )
    fields = slurm_records.parse_node_line(line)
    assert fields["State"] == "IDLE+DRAIN+DYNAMIC_NORM"
    assert fields["Reason"] == "bad HBM State=IDLE CPUAlloc=0 see [ticket 7]"
    assert fields["ReasonUser"] == "root"
    assert (fields["Comment"], fields["Extra"]) == ("rma", "rack=12")
    assert fields["OS"] == "Linux 6.8.0-1015-aws #16-Ubuntu SMP Mon Aug 19 19:38:17 UTC 2024"
    assert fields["Gres"] == "gpu:h100:8(S:0-1)"
    unstamped = slurm_records.parse_node_line(
        record("train-6", "IDLE", reason=None) + " Reason=x y"
    )
    assert unstamped["Reason"] == "x y" and "ReasonUser" not in unstamped


CLUSTER_NODES = {
    # name: (record, deleted with the default grace?)
    "dead 30 min ago": (record("train-1811", "DOWN+DYNAMIC_NORM+NOT_RESPONDING"), True),
    "dead 22.05": (LINE_2205, True),
    "dead 5 min ago": (
        record("train-1812", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", at="2024-09-01T12:25:00"),
        False,
    ),
    "up": (record("train-1813", "IDLE+DYNAMIC_NORM", reason=None), False),
    "allocated": (
        record("train-1814", "ALLOCATED+DYNAMIC_NORM", reason=None, cpu_alloc=192),
        False,
    ),
    "mixed, not responding": (
        record(
            "train-1815",
            "MIXED+DYNAMIC_NORM+NOT_RESPONDING",
            reason=None,
            cpu_alloc=96,
            alloc_tres="cpu=96,mem=500G,gres/gpu=4",
        ),
        False,
    ),
    "drained by an operator, then dead": (
        record(
            "train-1816",
            "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING",
            reason="GPU Xid=79, RMA ticket 4411",
            by="root",
            at="2024-09-01T08:00:00",
        ),
        False,
    ),
    "drained by Slurm, then dead": (
        record(
            "train-1817",
            "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING",
            reason="Kill task failed",
            at="2024-09-01T11:30:00",
        ),
        True,
    ),
    "DOWN but slurmd answers": (record("train-1818", "DOWN+DYNAMIC_NORM"), False),
    "static node": (record("train-99", "DOWN+NOT_RESPONDING"), False),
    "not a pool of this cluster": (
        record("login-3", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", feature="login"),
        False,
    ),
    "pool name without the pool's feature": (
        record("train-1820", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", feature="other"),
        False,
    ),
    "still completing": (
        record("train-1821", "DOWN+COMPLETING+DYNAMIC_NORM+NOT_RESPONDING"),
        False,
    ),
    "in a reservation": (
        record("train-1822", "DOWN+DYNAMIC_NORM+NOT_RESPONDING+RESERVED"),
        False,
    ),
    "old Slurm reason, slurmd restarted since": (
        record(
            "train-1823",
            "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING",
            reason="Kill task failed",
            at="2024-09-01T09:00:00",
            started="2024-09-01T12:20:00",
            busy="2024-09-01T12:20:00",
        ),
        False,
    ),
}


def test_reap_deletes_only_dead_dynamic_nodes_of_the_pools(aws, tmp_path: Path) -> None:
    node, run = head(tmp_path, aws, [line for line, _ in CLUSTER_NODES.values()])
    result = node.reap(ec2=False)
    expected = [
        slurm_records.parse_node_line(line)["NodeName"] for line, go in CLUSTER_NODES.values() if go
    ]
    assert run.deleted == expected == ["train-1811", "dev-1811", "train-1817"]
    assert result["deleted"] == expected and result["failed"] == {}
    kept = result["kept"]
    assert "grace" in kept["train-1812"]
    assert "left for the operator" in kept["train-1816"] and "root" in kept["train-1816"]
    assert kept["train-1818"] == "DOWN but slurmd responds"
    assert kept["train-99"] == "not a dynamic node"
    assert "COMPLETING" in kept["train-1821"] and "RESERVED" in kept["train-1822"]
    assert "grace" in kept["train-1823"]
    assert "MIXED" in kept["train-1815"]
    # Up and allocated nodes, and other clusters' names, are not even mentioned.
    assert not {"train-1813", "train-1814", "login-3"} & set(kept)
    # The listing asked for every node, with times scontrol prints the same on 22.05 and 23.11.
    assert [
        "env",
        "SLURM_TIME_FORMAT=standard",
        "scontrol",
        "--all",
        "--oneliner",
        "show",
        "node",
    ] in run.calls


@pytest.mark.parametrize(
    ("grace", "deleted"),
    [
        (900, ["train-1811"]),  # DOWN 30 min: past 15 min; the other 14 min 59 s
        (1800, ["train-1811"]),
        (1801, []),
        (0, ["train-1811", "train-1812"]),
    ],
)
def test_reap_grace_period_counts_from_the_down_stamp(aws, tmp_path, grace, deleted) -> None:
    lines = [
        record("train-1811", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", at="2024-09-01T12:00:00"),
        record("train-1812", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", at="2024-09-01T12:15:01"),
    ]
    node, run = head(tmp_path, aws, lines)
    assert node.reap(grace=grace, ec2=False)["deleted"] == deleted
    assert run.deleted == deleted


def test_reap_allocated_or_operator_drained_nodes_stay_even_with_no_grace(aws, tmp_path) -> None:
    keep = [
        record("train-1", "ALLOCATED+DYNAMIC_NORM", reason=None, cpu_alloc=192),
        record("train-2", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", cpu_alloc=8),
        record("train-3", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", alloc_tres="cpu=8"),
        record("train-4", "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING", reason="maint", by="alice"),
        record("train-5", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", reason="bad NIC", by="root"),
        record("train-6", "IDLE+DRAIN+DYNAMIC_NORM+NOT_RESPONDING", reason="maint", by="root"),
    ]
    node, run = head(tmp_path, aws, keep)
    result = node.reap(grace=0, ec2=False)
    assert result["deleted"] == [] and run.deleted == []
    assert result["kept"]["train-2"] == "resources still allocated"
    assert "alice" in result["kept"]["train-4"]


def test_reap_keeps_an_operator_drain_slurm_23_02_restamped(aws, tmp_path) -> None:
    """From Slurm 23.02 on, a drained node that stops responding gets " : Not responding"
    appended to its reason, and the whole reason stamped with SlurmUser (seen on 24.11;
    set_node_reason in src/slurmctld/node_mgr.c). The operator's part keeps the record; a
    reason made only of Slurm's own messages does not."""
    lines = [
        record(
            "train-1",
            "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING",
            reason="ECC errors on GPU 3 : Not responding",
        ),
        record(
            "train-2",
            "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING",
            reason="Kill task failed : Not responding",
        ),
        record(
            "train-3",
            "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING",
            reason="maint : Kill task failed : Not responding",
        ),
    ]
    fields = slurm_records.parse_node_line(lines[0])
    assert (fields["Reason"], fields["ReasonUser"]) == (
        "ECC errors on GPU 3 : Not responding",
        "slurm",
    )
    node, run = head(tmp_path, aws, lines)
    result = node.reap(grace=0, ec2=False)
    assert result["deleted"] == run.deleted == ["train-2"]
    assert "'ECC errors on GPU 3'" in result["kept"]["train-1"]
    assert "left for the operator" in result["kept"]["train-1"]
    assert "'maint'" in result["kept"]["train-3"]


def test_reap_slurm_user_by_uid(aws, tmp_path: Path) -> None:
    """A reason stamp shows the uid when the name does not resolve."""
    node, _run = head(
        tmp_path, aws, [record("train-1", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", by="64030")]
    )
    assert node.slurm_users() == {"slurm", "64030"}
    assert node.reap(ec2=False)["deleted"] == ["train-1"]


def test_reap_dry_run_deletes_nothing(aws, tmp_path: Path) -> None:
    node, run = head(tmp_path, aws, [record("train-1", "DOWN+DYNAMIC_NORM+NOT_RESPONDING")])
    result = node.reap(ec2=False, dry_run=True)
    assert result["would_delete"] == ["train-1"] and result["deleted"] == []
    assert run.deleted == []


def test_reap_reports_a_refused_delete_and_goes_on(aws, tmp_path: Path, capsys) -> None:
    lines = [
        record("train-1", "DOWN+DYNAMIC_NORM+NOT_RESPONDING"),
        record("train-2", "DOWN+DYNAMIC_NORM+NOT_RESPONDING"),
    ]
    node, _run = head(tmp_path, aws, lines, refuse={"train-1"})
    assert cli.main(["reap", "--no-ec2"], node=node) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["deleted"] == ["train-2"]
    assert out["failed"] == {"train-1": "Requested nodes are busy"}


def test_reap_fails_cleanly_without_slurmctld(aws, tmp_path: Path) -> None:
    import subprocess

    def down(cmd, check=True):
        return subprocess.CompletedProcess(
            cmd, 1, "", "slurm_load_ctl_conf error: Unable to contact slurm controller"
        )

    node, _run = head(tmp_path, aws, [])
    node.run = down
    assert cli.main(["reap"], node=node) == 1


def pool_instance(session, subnet: str, address: str, pool: str, cluster: str = PLAN.name) -> str:
    ec2 = session.client("ec2")
    image = "ami-12c6146b"  # one of moto's built-in images (listing them takes seconds)
    tags = [
        {"Key": "slurmstack:cluster", "Value": cluster},
        {"Key": "slurmstack:pool", "Value": pool},
    ]
    made = ec2.run_instances(
        ImageId=image,
        InstanceType="t3.micro",
        MinCount=1,
        MaxCount=1,
        SubnetId=subnet,
        PrivateIpAddress=address,
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )
    return str(made["Instances"][0]["InstanceId"])


def test_reap_keeps_nodes_a_live_instance_still_answers_for(aws, tmp_path: Path) -> None:
    """The EC2 cross-check (moto): one DescribeInstances by the cluster tag. A record whose
    name or address belongs to a live instance of the cluster stays; a terminated instance's
    record, or one whose address another cluster uses, goes."""
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.42.0.0/16")["Subnet"]["SubnetId"]
    pool_instance(aws, subnet, "10.42.7.19", "train")  # still running: same name, train-1811
    gone = pool_instance(aws, subnet, "10.42.7.20", "train")
    ec2.terminate_instances(InstanceIds=[gone])
    pool_instance(aws, subnet, "10.42.7.21", "train", cluster="someone-else")
    stopped = pool_instance(aws, subnet, "10.42.8.1", "dev")
    ec2.stop_instances(InstanceIds=[stopped])

    def dead(name: str, address: str) -> str:
        line = record(name, "DOWN+DYNAMIC_NORM+NOT_RESPONDING")
        return line.replace("NodeAddr=10.42.7.19", f"NodeAddr={address}")

    lines = [
        dead("train-1811", "10.42.7.19"),
        dead("train-1812", "10.42.7.20"),
        dead("train-1813", "10.42.7.21"),
        dead("dev-2049", "10.42.8.1"),
        dead("train-9999", "train-9999"),  # NodeAddr a host name: matched by name only
    ]
    node, run = head(tmp_path, aws, lines)
    result = node.reap()
    assert result["deleted"] == run.deleted == ["train-1812", "train-1813", "train-9999"]
    assert "instance" in result["kept"]["train-1811"]
    assert "instance" in result["kept"]["dev-2049"]


def test_reap_deletes_nothing_when_ec2_cannot_be_asked(aws, tmp_path: Path) -> None:
    node, run = head(tmp_path, aws, [record("train-1", "DOWN+DYNAMIC_NORM+NOT_RESPONDING")])

    class Broken:
        def client(self, *_a, **_k):
            raise RuntimeError("AccessDenied")

    node._session = Broken()
    with pytest.raises(base.AgentError, match="cannot list the cluster's instances"):
        node.reap()
    assert run.deleted == []


class SystemctlRunner(Runner):
    def __init__(self, enabled: str) -> None:
        super().__init__()
        self.enabled = enabled

    def __call__(self, cmd: list[str], check: bool = True):
        import subprocess

        if cmd[:2] == ["systemctl", "is-enabled"]:
            self.calls.append(cmd)
            return subprocess.CompletedProcess(cmd, 1, f"{self.enabled}\n", "")
        return super().__call__(cmd, check)


@pytest.mark.parametrize(
    ("enabled", "enables"), [("disabled", True), ("masked", False), ("enabled", False)]
)
def test_sync_config_enables_the_reaper_timer_on_the_head(aws, tmp_path, enabled, enables) -> None:
    publish_config(aws, "head")
    run = SystemctlRunner(enabled)
    make_node(tmp_path, aws, "head", run=run).sync_config(poll=0)
    assert (tmp_path / config_sync.REAPER_TIMER_PATH.lstrip("/")).exists()
    start = ["systemctl", "enable", "--now", config_sync.REAPER_TIMER]
    assert (start in run.calls) is enables
    # A pool node has no reaper.
    pool = SystemctlRunner("disabled")
    make_node(tmp_path / "pool", aws, "train", run=pool).sync_config(poll=0)
    assert not any("is-enabled" in c for c in pool.calls)
