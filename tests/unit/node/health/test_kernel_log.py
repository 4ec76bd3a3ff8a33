"""kernel_log: new critical XIDs since the last look, most severe first; the position moves on
only when saved, and starts again with a new boot."""

from __future__ import annotations

from pathlib import Path

from slurmstack.contract import Health
from slurmstack.node.health.kernel_log import (
    Cursor,
    new_findings,
    read_cursor,
    records,
    save_cursor,
)
from support.node import kernel_log, make_node

CRITICAL = (79, 64, 48, 63)  # replace-worthy first, as node.json orders them
GPU_NODE = Health(gpus=8, critical_xids=CRITICAL)


def new_xids(node, critical):  # type: ignore[no-untyped-def]
    return new_findings(node, Health(gpus=8, critical_xids=critical))


FELL_OFF = "NVRM: Xid (PCI:0000:10:1c): 79, pid=1896, GPU has fallen off the bus."
REMAP = "NVRM: Xid (PCI:0000:11:00): 63, pid=2, Row Remapper: New row marked for remapping."


def test_records_keep_their_sequence_numbers(tmp_path: Path) -> None:
    kernel_log(tmp_path, "hello", "world", first=40)
    node = make_node(tmp_path, None, "train")
    assert records(node) == [(40, "hello"), (41, "world")]


def test_only_critical_xids_since_the_cursor_count(tmp_path: Path) -> None:
    node = make_node(tmp_path, None, "train")
    application = "NVRM: Xid (PCI:0000:10:1c): 13, pid=77, Graphics Exception"
    kernel_log(tmp_path, "eth0: link up", application, REMAP, FELL_OFF)
    found, cursor = new_xids(node, CRITICAL)
    assert [f.detail for f in found] == [
        "79 pid=1896, GPU has fallen off the bus (PCI:0000:10:1c)",
        "63 pid=2, Row Remapper: New row marked for remapping (PCI:0000:11:00)",
    ]
    assert cursor.sequence == 4
    # Not saved (the node could not act on it): found again.
    assert [f.detail[:2] for f in new_xids(node, CRITICAL)[0]] == ["79", "63"]
    save_cursor(node, cursor)
    assert new_xids(node, CRITICAL)[0] == []
    kernel_log(tmp_path, REMAP, first=5)
    assert [f.detail[:2] for f in new_xids(node, CRITICAL)[0]] == ["63"]


def test_a_new_boot_reads_its_log_from_the_start(tmp_path: Path) -> None:
    node = make_node(tmp_path, None, "train")
    boot = tmp_path / "proc/sys/kernel/random/boot_id"
    boot.parent.mkdir(parents=True)
    boot.write_text("first\n")
    save_cursor(node, Cursor("first", 900))
    assert read_cursor(node) == Cursor("first", 900)
    boot.write_text("second\n")
    assert read_cursor(node) == Cursor("second", -1)


def test_no_kernel_log_no_finding(tmp_path: Path) -> None:
    node = make_node(tmp_path, None, "train")
    assert new_xids(node, CRITICAL)[0] == []
