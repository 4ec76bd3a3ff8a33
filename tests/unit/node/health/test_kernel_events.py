"""Kernel log records read right, against lines collected from public incident threads
(data/kernel, sources in its SOURCES.md): the XIDs NVIDIA's catalog resets a GPU for (context
switch timeouts, GSP errors, "GPU Reset Required", Blackwell NVLink fatal events), NVSwitch SXids,
and a GPU fallen off the bus that the driver reports without an Xid."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from slurmstack.contract import Check, Health
from slurmstack.node.health import kernel_events
from slurmstack.node.health.kernel_log import lost_this_boot, new_findings, save_cursor
from slurmstack.plan.health import plan_health
from slurmstack.spec import HealthSpec
from support.node import kernel_log, make_node

DATA = Path(__file__).resolve().parent / "data" / "kernel"
# The prefixes the threads' tools put before the kernel's message (SOURCES.md).
PREFIX = re.compile(
    r"^(?:\S+: kern: +\w+: \[[^\]]*\]: "  # Talos: "<ip>: kern: warning: [<time>]: "
    r"|kern\s+:\w+\s+: \S+ "  # dmesg -x --time-format iso
    r"|\[[^\]]*\] "  # dmesg, dmesg -T
    r"|kernel: )"  # journalctl
)
# The default policy, as a GPU node of the p5 example gets it in node.json.
GPU_NODE = plan_health(HealthSpec()).node_health(gpus=8, neuron_devices=0, efa_devices=32)


def kmsg_escape(text: str) -> str:
    """A record's text as /dev/kmsg prints it (the kernel's msg_add_ext_text)."""
    return "".join(
        f"\\x{ord(c):02x}" if ord(c) < 32 or ord(c) >= 127 or c == "\\" else c for c in text
    )


def sample(name: str) -> list[str]:
    """The kernel records of a sample file, as /dev/kmsg gives them: prefixes off, a dmesg
    continuation line (indented, no prefix) joined to its record with a newline."""
    records: list[str] = []
    for line in (DATA / name).read_text().splitlines():
        if not line.strip():
            continue
        if line[0].isspace() and not PREFIX.match(line.lstrip()) and records:
            records[-1] += "\n" + line.strip()
            continue
        records.append(PREFIX.sub("", line.strip(), count=1))
    return [kmsg_escape(r) for r in records]


def logged(tmp_path: Path, name: str, health: Health = GPU_NODE) -> list[tuple[Check, str]]:
    node = make_node(tmp_path, None, "train")
    kernel_log(tmp_path, *sample(name))
    found, _ = new_findings(node, health)
    return [(f.check, f.detail) for f in found]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "xid-109-ctxsw-timeout.log",  # the application's Xid 13s before it do not count
            [(Check.GPU_XID, "109 pid=1797828, name=pt_main_thread, Ch 00000008, errorString "
              "CTX SWITCH TIMEOUT, Info 0x58005 (PCI:0000:cb:00)")],
        ),
        (
            "xid-119-gsp-timeout.log",
            [(Check.GPU_XID, "119 pid=1346198, name=nvidia-smi, Timeout waiting for RPC from "
              "GSP! Expected function 103 (GSP_RM_ALLOC) (0x80 0x38) (PCI:0000:61:00)")],
        ),
        (
            "xid-119-gsp-timeout-a100.log",
            [(Check.GPU_XID, "119 pid=10200, name=NvmlTaskRunner, Timeout after 45s of waiting "
              "for RPC response from GPU5 GSP! Expected function 76 (GSP_RM_CONTROL) sequence "
              "24174 (0x20801322 0x808) (PCI:0001:6c:00)")],
        ),
        (
            "xid-154-reset-required.log",
            [(Check.GPU_XID, "154 GPU recovery action changed from 0x0 (None) to 0x1 "
              "(GPU Reset Required) (PCI:0000:0b:00)")],
        ),
        (
            "xid-nvlink5-fatal-and-nonfatal.log",  # Xid 144 Nonfatal: NVIDIA ignores it
            [(Check.GPU_XID, "149 NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000 "
              "0x00000000 0x00000000 0x00000000 0x00000000) (PCI:0000:00:00)")],
        ),
        (
            "xid-nvlink5-gb200.log",  # Xid 145 Nonfatal: ignored
            [(Check.GPU_XID, "149 NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 "
              "0x00000000 0x00000000 0x00000000 0x00000000) (PCI:0019:01:00)")],
        ),
        ("xid-45-after-nvlink5.log", []),  # the applications' side of it: nothing to drain
        (
            "bus-lost-at-probe.log",
            [(Check.GPU_LOST, "GPU 0000:b3:00.0 (PCI ID 10de:26b5) has fallen off the bus and "
              "does not answer")],
        ),
        (
            "bus-lost-runtime.log",
            [(Check.GPU_LOST, "GPU 0000:a1:00.0 has fallen off the bus and does not answer")],
        ),
        (
            "bus-lost-legacy.log",  # twice in the log, one finding
            [(Check.GPU_LOST, "GPU 0000:01:00.0 has fallen off the bus and does not answer")],
        ),
        ("sxid-22013-nonfatal.log", []),  # non-fatal NVSwitch events: no drain
        (
            "sxid-24007-fatal.log",
            [(Check.NVSWITCH_SXID, "SXid 24007 on nvswitch1 (PCI:0000:aa:00.0): Severity 1 "
              "Engine instance 12 Sub-engine instance 00")],
        ),
        ("sxid-12028-data-only.log", []),  # a Data line alone does not say fatal
    ],
)  # fmt: skip
def test_recorded_kernel_logs_drain_with_the_precise_reason(
    tmp_path: Path, name: str, expected: list[tuple[Check, str]]
) -> None:
    assert logged(tmp_path, name) == expected


def test_the_probe_time_record_is_one_record_over_three_lines() -> None:
    (lost, *_rest) = sample("bus-lost-at-probe.log")
    assert lost.count("\\x0a") == 2  # as /dev/kmsg gives it
    found = kernel_events.event(lost)
    assert found == kernel_events.BusLost("0000:b3:00.0", "10de:26b5")


def test_a_lost_gpu_with_its_xid_79_is_named_once(tmp_path: Path) -> None:
    xid = "NVRM: Xid (PCI:0000:a1:00): 79, pid=0, GPU has fallen off the bus."
    node = make_node(tmp_path, None, "train")
    kernel_log(tmp_path, xid, *sample("bus-lost-runtime.log"))
    found, _ = new_findings(node, GPU_NODE)
    assert [f.check for f in found] == [Check.GPU_XID]


def test_a_node_without_gpus_ignores_nvswitch_lines(tmp_path: Path) -> None:
    assert logged(tmp_path, "sxid-24007-fatal.log", Health()) == []


def test_the_boot_check_reads_the_whole_boot(tmp_path: Path) -> None:
    """A GPU lost at probe is named at boot, whatever the periodic check's cursor says; XIDs
    are left to the periodic check (a restarted slurmd must not fail its boot check for one
    the node was already drained for)."""
    node = make_node(tmp_path, None, "train")
    kernel_log(tmp_path, *sample("xid-109-ctxsw-timeout.log"), *sample("bus-lost-at-probe.log"))
    save_cursor(node, new_findings(node, GPU_NODE)[1])
    assert new_findings(node, GPU_NODE)[0] == []
    assert [f.reason for f in lost_this_boot(node, GPU_NODE)] == [
        "slurmstack:gpu-lost: GPU 0000:b3:00.0 (PCI ID 10de:26b5) has fallen off the bus and "
        "does not answer"
    ]


def node_from_definition(tmp_path: Path, xids: dict[int, str]):  # type: ignore[no-untyped-def]
    """A p5 training node whose node.json is rendered from the example with ``health.xids``."""
    import yaml

    from slurmstack.contract import NODE_CONFIG_PATH
    from slurmstack.loader import load_object
    from slurmstack.plan import build_plan
    from slurmstack.render import role_files
    from support.examples import REPO

    data = yaml.safe_load((REPO / "examples" / "p5-training.yaml").read_text())
    data.setdefault("health", {})["xids"] = xids
    loaded = load_object(data)
    assert loaded.spec is not None and not loaded.findings, loaded.findings
    node_json = tmp_path / NODE_CONFIG_PATH.lstrip("/")
    node_json.parent.mkdir(parents=True, exist_ok=True)
    node_json.write_text(role_files(build_plan(loaded.spec), "train")[NODE_CONFIG_PATH])
    return make_node(tmp_path, None, "train")


def test_an_operator_adds_and_ignores_xids_in_the_definition(tmp_path: Path) -> None:
    """health.xids reaches the node through node.json: the application's Xid 13 made to drain
    (after the worse 109), then 109 ignored, on the recorded log."""
    node = node_from_definition(tmp_path / "add", {13: "leave"})
    kernel_log(tmp_path / "add", *sample("xid-109-ctxsw-timeout.log"))
    found, _ = new_findings(node, node.config().health)
    assert [f.detail.split()[0] for f in found] == ["109", "13"]
    assert found[1].detail.endswith("Illegal Instruction Parameter (PCI:0000:cb:00)")

    node = node_from_definition(tmp_path / "ignore", {109: "ignore"})
    kernel_log(tmp_path / "ignore", *sample("xid-109-ctxsw-timeout.log"))
    assert 109 not in node.config().health.critical_xids
    assert new_findings(node, node.config().health)[0] == []
