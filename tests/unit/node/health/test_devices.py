"""devices: GPU, Neuron and EFA devices present; nvidia-smi answering for every GPU, with no
ECC error pending; EFA ports ACTIVE."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmstack.contract import Check, Health
from slurmstack.node.health.devices import GPU_QUERY, ROW_QUERY, device_findings
from support.node import Answers, efa_ports, fake_devices, make_node, nvidia_smi

P5 = Health(gpus=8, efa_devices=32)


def checks(tmp_path: Path, run: Answers, expected: Health = P5) -> list[tuple[str, str]]:
    node = make_node(tmp_path, None, "train", run=run)
    return [(f.check.value, f.detail) for f in device_findings(node, expected)]


def test_a_healthy_node_has_no_finding(tmp_path: Path) -> None:
    fake_devices(tmp_path, gpus=8, efa=32)
    efa_ports(tmp_path, ["4: ACTIVE"] * 32)
    run = Answers({GPU_QUERY[:2]: (0, nvidia_smi(8))})
    assert checks(tmp_path, run) == []
    assert list(GPU_QUERY) in run.calls and list(ROW_QUERY) in run.calls


@pytest.mark.parametrize(
    ("gpus", "efa", "found"),
    [
        (7, 32, ("gpu-count", "7 of 8 GPUs present (/dev/nvidia*)")),
        (8, 31, ("efa-count", "31 of 32 EFA devices (/sys/class/infiniband)")),
    ],
)
def test_missing_devices(tmp_path: Path, gpus: int, efa: int, found) -> None:
    fake_devices(tmp_path, gpus=gpus, efa=efa)
    run = Answers({GPU_QUERY[:2]: (0, nvidia_smi(gpus))})
    assert found in checks(tmp_path, run)


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ((124, ""), ("gpu-smi", "nvidia-smi did not answer within 15 s")),
        ((15, "Unable to determine the device handle"), ("gpu-smi", "nvidia-smi failed (exit 15)")),
        ((0, nvidia_smi(7)), ("gpu-smi", "nvidia-smi lists 7 of 8 GPUs")),
        (
            (0, nvidia_smi(8, {3: "3, 00000000:13:00.0, [Unknown Error], [Unknown Error]"})),
            ("gpu-smi", "GPU 3 (00000000:13:00.0): [Unknown Error]"),
        ),
        (
            (0, nvidia_smi(8, {5: "5, 00000000:15:00.0, 2, [N/A]"})),
            ("gpu-ecc", "GPU 5 (00000000:15:00.0): 2 uncorrectable ECC errors"),
        ),
        (
            (0, nvidia_smi(8, {1: "1, 00000000:11:00.0, 0, Yes"})),
            ("gpu-ecc", "GPU 1 (00000000:11:00.0): retired pages pending a reset"),
        ),
    ],
)
def test_nvidia_smi_must_answer_for_every_gpu(tmp_path: Path, answer, found) -> None:
    fake_devices(tmp_path, gpus=8, efa=32)
    result = checks(tmp_path, Answers({GPU_QUERY[:2]: answer}))
    assert any(f[0] == found[0] and f[1].startswith(found[1]) for f in result), result


def test_a_pending_row_remap_waits_for_a_reset(tmp_path: Path) -> None:
    fake_devices(tmp_path, gpus=8, efa=32)
    rows = "00000000:10:00.0, 0\n00000000:11:00.0, 1\n"
    run = Answers({GPU_QUERY[:2]: (0, nvidia_smi(8)), ROW_QUERY[:2]: (0, rows)})
    assert checks(tmp_path, run) == [
        ("gpu-ecc", "GPU 00000000:11:00.0: remapped rows pending a reset (1)")
    ]


def test_without_nvidia_smi_the_device_count_stands_alone(tmp_path: Path) -> None:
    fake_devices(tmp_path, gpus=8, efa=32)
    assert checks(tmp_path, Answers({("nvidia-smi",): (127, "")})) == []


def test_an_efa_port_that_is_not_active(tmp_path: Path) -> None:
    fake_devices(tmp_path, gpus=0, efa=0)
    efa_ports(tmp_path, ["4: ACTIVE", "1: DOWN"])
    found = checks(tmp_path, Answers(), Health(efa_devices=2))
    assert found == [("efa-port", "rdmap1s0 port 1 is 1: DOWN")]
    assert Check.EFA_PORT.value == found[0][0]
