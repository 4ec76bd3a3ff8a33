"""lnet-efa: LNet for Lustre over EFA, as AWS documents it."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack.node import cli
from slurmstack.node.boot import lnet
from slurmstack.node.context import AgentError, Context
from support.node import (
    LNET_SETUP,
    P5_EFA_DEVICES,
    P5_LUSTRE_EFA,
    PRIMARY_INTERFACE,
    LnetRunner,
    fake_efa_devices,
    lnet_node,
)


def test_lnet_efa_on_a_p5_node_runs_the_documented_commands(aws, tmp_path: Path) -> None:
    run = LnetRunner()
    node = lnet_node(tmp_path, aws, run)
    fake_efa_devices(tmp_path, P5_EFA_DEVICES)
    assert node.config().lustre_efa_interfaces == 8
    run.calls.clear()
    assert lnet.lnet_efa(node, delay=0) == P5_LUSTRE_EFA
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
    lnet.lnet_efa(node, delay=0)
    run.calls.clear()
    assert cli.main(["--root", str(tmp_path), "lnet-efa"], ctx=node) == 0
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
    lnet.lnet_efa(node, delay=0)
    deleted = run.calls.index(["lnetctl", "net", "del", "--net", "tcp"])
    assert run.calls[deleted + 1] == ["lnetctl", "net", "add", "--net", "tcp", "--if", "enp71s0"]
    assert run.nets["tcp"] == [PRIMARY_INTERFACE]


def test_lnet_efa_retries_until_lnet_takes_the_interfaces(aws, tmp_path: Path) -> None:
    run = LnetRunner()
    node = lnet_node(tmp_path, aws, run)
    fake_efa_devices(tmp_path, P5_EFA_DEVICES)
    flaky = ["lnetctl", "net", "add", "--net", "efa", "--if", "rdmap147s0", "--peer-credits", "32"]
    run.fail_next = [flaky, list(flaky)]
    assert lnet.lnet_efa(node, attempts=3, delay=0) == P5_LUSTRE_EFA
    assert run.calls.count(flaky) == 3
    assert run.nets["efa"] == P5_LUSTRE_EFA  # each device once, whatever the retries
    with pytest.raises(AgentError, match="rdmap147s0"):
        run.nets.clear()
        run.fail_next = [flaky] * 2
        lnet.lnet_efa(node, attempts=2, delay=0)


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
    with pytest.raises(AgentError, match=problem):
        lnet.lnet_efa(node, delay=0)
    assert not any(c[0] in ("lnetctl", "modprobe") for c in run.calls)


def test_efa_devices_are_the_ones_the_efa_driver_owns(tmp_path: Path) -> None:
    fake_efa_devices(tmp_path, ["rdmap2s0", "rdmap10s0"])
    fake_efa_devices(tmp_path, ["mlx5_0"], driver="mlx5_core")
    (tmp_path / "sys/class/infiniband/stray").mkdir()
    assert lnet.efa_devices(Context(root=tmp_path)) == ["rdmap10s0", "rdmap2s0"]


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
