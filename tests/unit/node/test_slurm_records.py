"""Slurm's node records as `scontrol show node -o` prints them."""

from __future__ import annotations

from node.support import LINE_2205, record
from slurmstack.node import slurm


def test_parse_a_slurm_22_05_record() -> None:
    fields = slurm.parse_node_line(LINE_2205)
    assert fields["NodeName"] == "dev-1811"
    assert fields["State"] == "DOWN+DYNAMIC_NORM+NOT_RESPONDING"
    assert fields["OS"] == "Linux 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0"
    assert fields["CfgTRES"] == "cpu=64,mem=124519M,billing=64"
    assert fields["AllocTRES"] == ""
    assert fields["CPUAlloc"] == "0"
    assert fields["Reason"] == "Not responding"
    assert (fields["ReasonUser"], fields["ReasonTime"]) == ("slurm", "2024-09-01T11:00:00")
    assert slurm.slurm_time(fields["LastBusyTime"]) is not None
    assert slurm.slurm_time("None") is None and slurm.slurm_time(None) is None


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
    fields = slurm.parse_node_line(line)
    assert fields["State"] == "IDLE+DRAIN+DYNAMIC_NORM"
    assert fields["Reason"] == "bad HBM State=IDLE CPUAlloc=0 see [ticket 7]"
    assert fields["ReasonUser"] == "root"
    assert (fields["Comment"], fields["Extra"]) == ("rma", "rack=12")
    assert fields["OS"] == "Linux 6.8.0-1015-aws #16-Ubuntu SMP Mon Aug 19 19:38:17 UTC 2024"
    assert fields["Gres"] == "gpu:h100:8(S:0-1)"
    unstamped = slurm.parse_node_line(record("train-6", "IDLE", reason=None) + " Reason=x y")
    assert unstamped["Reason"] == "x y" and "ReasonUser" not in unstamped
