"""findings: one reason per node, in slurmstack's one form, and the health log."""

from __future__ import annotations

from pathlib import Path

from slurmstack.contract import HEALTH_LOG_PATH, REASON_MAX_CHARACTERS, Check, parse_reason
from slurmstack.node.health.findings import Finding, most_telling, record
from support.node import make_node


def test_a_reason_has_the_one_form_and_a_bounded_detail() -> None:
    finding = Finding(Check.GPU_XID, "79 pid=12, GPU has fallen off the bus (PCI:0000:10:1c)")
    assert finding.reason == (
        "slurmstack:gpu-xid: 79 pid=12, GPU has fallen off the bus (PCI:0000:10:1c)"
    )
    assert parse_reason(finding.reason) == ("gpu-xid", finding.detail)
    long = Finding(Check.DISK_FULL, "x" * 500)
    assert len(long.reason) == REASON_MAX_CHARACTERS and long.reason.endswith("x...")


def test_the_most_telling_finding_names_the_node() -> None:
    found = [
        Finding(Check.DISK_FULL, "/ is 97% full"),
        Finding(Check.GPU_COUNT, "7 of 8"),
        Finding(Check.GPU_XID, "79 ..."),
    ]
    assert most_telling(found).check is Check.GPU_XID
    notice = Finding(Check.SPOT_INTERRUPTION, "EC2 will terminate")
    assert most_telling([*found, notice]) is notice


def test_every_finding_goes_to_the_health_log(tmp_path: Path) -> None:
    node = make_node(tmp_path, None, "train")
    record(node, [Finding(Check.EFA_PORT, "rdmap0s0 port 1 is 1: DOWN")], "health-check")
    record(node, [Finding(Check.DISK_FULL, "/ is 99% full")], "boot")
    lines = (tmp_path / HEALTH_LOG_PATH.lstrip("/")).read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == [
        "health-check: slurmstack:efa-port: rdmap0s0 port 1 is 1: DOWN",
        "boot: slurmstack:disk-full: / is 99% full",
    ]
