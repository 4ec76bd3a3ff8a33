"""What the kernel log says about GPUs and NVSwitches, read record by record: NVIDIA's Xid
lines, NVSwitch SXid lines, and a GPU fallen off the bus that the driver reports without an Xid.

Only the drivers' formats live here; which Xids drain a node is the node's configuration
(Health.critical_xids, rendered from the definition). The formats, from NVIDIA's
open-gpu-kernel-modules and samples in tests/unit/node/health/data/kernel:

- ``NVRM: Xid (PCI:0000:10:1c): 79, pid=1896, GPU has fallen off the bus.``
- Blackwell's NVLink Xids (144-150) say whether the event is fatal:
  ``NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 ...)``;
  NVIDIA's decode table resets the GPU for the fatal ones and ignores the others.
- Xid 154 names the recovery the driver now needs: ``154, GPU recovery action changed from
  0x0 (None) to 0x1 (GPU Reset Required)``; back to None it needs nothing.
- NVSwitch events, several lines each: ``nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013,
  Non-fatal, Link 44 Minion Link DLREQ interrupt``, ``..., Severity 0 Engine instance 44 ...``
  (severity 1 is fatal, NVSWITCH_ERROR_SEVERITY_FATAL) and a ``Data {...}`` line.
- A GPU lost without an Xid, in three wordings: at probe (one record over three lines),
  ``NVRM: The NVIDIA GPU 0000:b3:00.0\\nNVRM: (PCI ID: 10de:26b5) installed in this system
  has\\nNVRM: fallen off the bus and is not responding to commands.``; at run time,
  ``NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus.``; in older drivers,
  ``NVRM: GPU at 0000:01:00.0 has fallen off the bus.``
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ...contract import Check
from .findings import Finding

XID = re.compile(r"NVRM: Xid \((?P<device>[^)]*)\): (?P<xid>\d+),?\s*(?P<rest>.*)", re.DOTALL)
SXID = re.compile(
    r"nvidia-nvswitch(?P<switch>\d+): SXid \((?P<device>[^)]*)\): (?P<sxid>\d+),\s*(?P<rest>.*)"
)
LOST = (
    re.compile(r"NVRM: The NVIDIA GPU (?P<device>[0-9a-fA-F:.]+)\s.*fallen off the bus", re.DOTALL),
    re.compile(r"NVRM: GPU (?P<device>[0-9a-fA-F]{4}:[0-9a-fA-F:.]+): GPU has fallen off the bus"),
    re.compile(r"NVRM: GPU at (?:PCI:)?(?P<device>[0-9a-fA-F:.]+) has fallen off the bus"),
)
PCI_ID = re.compile(r"PCI ID: (?P<id>[0-9a-fA-F]{4}:[0-9a-fA-F]{4})")
RECOVERY = re.compile(r"recovery action changed from .*? to (?P<code>\S+) \((?P<action>[^)]*)\)")
NVLINK5 = range(144, 151)
FELL_OFF_XID = 79
# /dev/kmsg writes a record's control characters (its embedded newlines) as \xNN.
ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})")


def unescape(message: str) -> str:
    return ESCAPE.sub(lambda m: chr(int(m[1], 16)), message)


def one_line(text: str) -> str:
    """A multi-line record as one line, the repeated ``NVRM:`` prefixes taken out."""
    return " ".join(part.strip().removeprefix("NVRM:").strip() for part in text.splitlines())


def bus_address(device: str) -> str:
    """``PCI:0000:B3:00`` and ``0000:b3:00.0`` name the same GPU: ``0000:b3:00``."""
    address = device.lower().removeprefix("pci:")
    return address.rsplit(".", 1)[0] if address.count(":") == 2 and "." in address else address


@dataclass(frozen=True)
class Xid:
    number: int
    device: str
    text: str  # what follows the number, on one line

    @property
    def needs_action(self) -> bool:
        """False where the line itself says nothing needs doing (NVIDIA's catalog): a
        Blackwell NVLink event marked Nonfatal, a recovery action changed back to None."""
        if self.number in NVLINK5:
            return "Fatal" in self.text.split()
        if self.number == 154:
            recovery = RECOVERY.search(self.text)
            return recovery is None or recovery["action"].strip().lower() != "none"
        return True


@dataclass(frozen=True)
class SXid:
    number: int
    switch: str
    device: str
    text: str
    fatal: bool | None  # None: a line that does not say (the Data line)


@dataclass(frozen=True)
class BusLost:
    device: str
    pci_id: str | None


Event = Xid | SXid | BusLost


def event(message: str) -> Event | None:
    """The GPU or NVSwitch event one kernel record reports, if any (an Xid line wins)."""
    text = unescape(message)
    if match := XID.search(text):
        return Xid(int(match["xid"]), match["device"], one_line(match["rest"]).rstrip("."))
    if match := SXID.search(text):
        rest = match["rest"].strip()
        fatal = _sxid_severity(rest)
        return SXid(int(match["sxid"]), match["switch"], match["device"], rest, fatal)
    for pattern in LOST:
        if match := pattern.search(text):
            pci_id = PCI_ID.search(text)
            return BusLost(match["device"].rstrip("."), pci_id["id"] if pci_id else None)
    return None


def _sxid_severity(rest: str) -> bool | None:
    if rest.startswith("Non-fatal") or rest.startswith("Severity 0 "):
        return False
    if rest.startswith("Fatal") or rest.startswith("Severity 1 "):
        return True
    return None


def findings(messages: Iterable[str], critical: tuple[int, ...], nvswitch: bool) -> list[Finding]:
    """Findings for what ``messages`` report: critical Xids (most severe first: ``critical``
    is in that order, one finding per Xid), GPUs lost without an Xid 79 for them, and fatal
    NVSwitch errors (where the node has NVSwitches' GPUs: ``nvswitch``)."""
    xids: dict[int, Finding] = {}
    fell_off: set[str] = set()
    lost: dict[str, Finding] = {}
    sxids: dict[tuple[str, int], Finding] = {}
    for message in messages:
        found = event(message)
        if isinstance(found, Xid):
            if found.number == FELL_OFF_XID:
                fell_off.add(bus_address(found.device))
            if found.number in critical and found.needs_action:
                detail = f"{found.number} {found.text} ({found.device})"
                xids.setdefault(found.number, Finding(Check.GPU_XID, detail))
        elif isinstance(found, BusLost):
            ident = f" (PCI ID {found.pci_id})" if found.pci_id else ""
            detail = f"GPU {found.device}{ident} has fallen off the bus and does not answer"
            lost.setdefault(bus_address(found.device), Finding(Check.GPU_LOST, detail))
        elif isinstance(found, SXid) and nvswitch and found.fatal:
            key = (found.switch, found.number)
            detail = f"SXid {found.number} on nvswitch{found.switch} ({found.device}): {found.text}"
            # The event's message line ("Fatal, Link 12 ...") says more than its severity line.
            if key not in sxids or found.text.startswith("Fatal"):
                sxids[key] = Finding(Check.NVSWITCH_SXID, detail)
    out = [xids[x] for x in critical if x in xids]
    if FELL_OFF_XID not in critical:
        fell_off = set()  # an operator who ignores Xid 79 still hears of a lost GPU
    out += [f for device, f in lost.items() if device not in fell_off]
    return out + list(sxids.values())
