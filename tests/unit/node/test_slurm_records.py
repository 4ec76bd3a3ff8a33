"""Slurm's node records as `scontrol show node -o` prints them, and the typed NodeRecord."""

from __future__ import annotations

import pytest

from slurmstack.node import slurm
from slurmstack.node.slurm import NodeRecord
from support.node import LINE_2205, record


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


# `scontrol show node -o` of one node an operator drained (root, "ECC errors on GPU 3") before
# its slurmd stopped, as tests/slurm/test_reaper.py leaves it, captured from each Slurm the
# project runs: Debian's 22.05.8, and 24.11.5 and 26.05.5 in the test roots (.ci/slurm-chroot).
# 22.05 keeps the operator's reason and stamp; 23.02 and later stack Slurm's own and re-stamp.
CAPTURED_22_05_8 = (
    "NodeName=batch-1815 Arch=x86_64 CoresPerSocket=32  CPUAlloc=0 CPUEfctv=64 CPUTot=64 CPUL"
    "oad=8.32 AvailableFeatures=batch ActiveFeatures=batch Gres=(null) NodeAddr=127.0.0.1 Nod"
    "eHostName=vm Version=22.05.8 OS=Linux 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMe"
    "mory=124519 AllocMem=0 FreeMem=14929 Sockets=1 Boards=1 State=DOWN+DRAIN+DYNAMIC_NORM+NO"
    "T_RESPONDING ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=batc"
    "h  BootTime=2026-12-01T15:42:45 SlurmdStartTime=2026-12-01T17:04:27 LastBusyTime=2026-12"
    "-01T17:04:27 CfgTRES=cpu=64,mem=124519M,billing=64 AllocTRES= CapWatts=n/a CurrentWatts="
    "0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=ECC errors"
    " on GPU 3 [root@2026-12-01T17:04:27]"
)
CAPTURED_24_11_5 = (
    "NodeName=batch-1815 Arch=x86_64 CoresPerSocket=32  CPUAlloc=0 CPUEfctv=64 CPUTot=64 CPUL"
    "oad=0.00 AvailableFeatures=batch ActiveFeatures=batch Gres=(null) NodeAddr=127.0.0.1 Nod"
    "eHostName=vm Version=24.11.5 OS=Linux 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMe"
    "mory=124519 AllocMem=0 FreeMem=15027 Sockets=1 Boards=1 State=DOWN+DRAIN+DYNAMIC_NORM+NO"
    "T_RESPONDING ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=batc"
    "h  BootTime=2026-12-01T15:42:45 SlurmdStartTime=2026-12-01T17:05:10 LastBusyTime=2026-12"
    "-01T17:05:10 ResumeAfterTime=None CfgTRES=cpu=64,mem=124519M,billing=64 AllocTRES= Curre"
    "ntWatts=0 AveWatts=0  Reason=ECC errors on GPU 3 : Not responding [slurm@2026-12-01T17:0"
    "5:36]"
)
CAPTURED_26_05_5 = (
    "NodeName=batch-1815 Arch=x86_64 CoresPerSocket=32  CPUAlloc=0 CPUEfctv=64 CPUTot=64 CPUL"
    "oad=0.00 AvailableFeatures=batch ActiveFeatures=batch Gres=(null) NodeAddr=127.0.0.1 Nod"
    "eHostName=vm Version=26.05.5 OS=Linux 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMe"
    "mory=124519 AllocMem=0 FreeMem=14728 Sockets=1 Boards=1 State=DOWN+DRAIN+DYNAMIC_NORM+NO"
    "T_RESPONDING ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=batc"
    "h  BootTime=2026-12-01T15:42:45 SlurmdStartTime=2026-12-01T17:06:04 LastBusyTime=2026-12"
    "-01T17:06:04 ResumeAfterTime=None SuspendTime=INFINITE CfgTRES=cpu=64,mem=124519M,billin"
    "g=64 AllocTRES= CurrentWatts=0 AveWatts=0 Reason=ECC errors on GPU 3 : Not responding [s"
    "lurm@2026-12-01T17:06:19]"
)


@pytest.mark.parametrize(
    ("line", "reasons", "user"),
    [
        (CAPTURED_22_05_8, ("ECC errors on GPU 3",), "root"),
        (CAPTURED_24_11_5, ("ECC errors on GPU 3", "Not responding"), "slurm"),
        (CAPTURED_26_05_5, ("ECC errors on GPU 3", "Not responding"), "slurm"),
    ],
    ids=["22.05", "24.11", "26.05"],
)
def test_node_record_reads_every_slurm_the_project_runs(
    line: str, reasons: tuple[str, ...], user: str
) -> None:
    node = NodeRecord.parse(line)
    assert (node.name, node.address) == ("batch-1815", "127.0.0.1")
    assert node.base == "DOWN"
    assert node.flags == {"DRAIN", "DYNAMIC_NORM", "NOT_RESPONDING"}
    assert node.reasons == reasons and node.reason_user == user
    assert node.reason_time is not None and node.time("SlurmdStartTime") is not None
    assert node.features == {"batch"}
    assert node.out_of_service and not node.busy and not node.allocated
    assert not node.rebooting and not node.power_saving and not node.powered_down
    assert node.fields["CfgTRES"] == "cpu=64,mem=124519M,billing=64"


@pytest.mark.parametrize(
    ("state", "cpu_alloc", "predicates"),
    [
        ("IDLE+DYNAMIC_NORM", 0, set()),
        ("MIXED+DYNAMIC_NORM", 8, {"busy", "allocated"}),
        ("ALLOCATED+DRAIN+DYNAMIC_NORM", 192, {"busy", "allocated", "out_of_service"}),
        ("IDLE+DRAIN+DYNAMIC_NORM+REBOOT_ISSUED", 0, {"out_of_service", "rebooting"}),
        ("IDLE+CLOUD+POWERED_DOWN", 0, {"power_saving", "powered_down"}),
        ("DOWN+CLOUD+POWERED_DOWN+POWERING_UP", 0, {"power_saving", "out_of_service"}),
        ("FUTURE", 0, {"power_saving"}),
        ("FAIL+DYNAMIC_NORM", 0, {"out_of_service"}),
        ("COMPLETING+DYNAMIC_NORM", 0, {"busy"}),
    ],
)
def test_node_record_predicates(state: str, cpu_alloc: int, predicates: set[str]) -> None:
    node = NodeRecord.parse(record("train-7", state, reason=None, cpu_alloc=cpu_alloc))
    every = {"busy", "allocated", "out_of_service", "rebooting", "power_saving", "powered_down"}
    assert {p for p in every if getattr(node, p)} == predicates
