"""New GPU and NVSwitch faults in the kernel log since the last look (kernel_events reads them).

The kernel's log (/dev/kmsg) gives each record a sequence number (`<priority>,<sequence>,
<microseconds>,<flags>;<message>`, lines starting with a blank continue a record). The last
sequence read is kept with the boot it belongs to (the numbers start again at every boot), and
only moves on once what was found has been acted on, so a finding the node could not yet act
on (slurmd's first run, before the node is registered) is found again."""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass

from ...contract import HEALTH_DIR, KERNEL_LOG_PATH, Check, Health
from ..context import Context, write_atomic
from . import kernel_events
from .findings import Finding

RECORD = re.compile(r"^\d+,(?P<seq>\d+),[^;]*;(?P<message>.*)$")
CURSOR = f"{HEALTH_DIR}/kernel-log.json"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
READ_SIZE = 65536
# A bound on one look: the kernel's buffer holds far fewer records than this.
MAX_READS = 100_000


@dataclass(frozen=True)
class Cursor:
    boot: str
    sequence: int  # the last record read; -1: nothing read yet in this boot


def records(ctx: Context) -> list[tuple[int, str]]:
    """(sequence, message) of every record the kernel log holds. /dev/kmsg gives one record per
    read and EAGAIN at the end; a regular file in its format (a test's) reads to its end."""
    path = ctx.path(KERNEL_LOG_PATH)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return []
    out: list[tuple[int, str]] = []
    carry = b""
    try:
        for _ in range(MAX_READS):
            try:
                chunk = os.read(fd, READ_SIZE)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # records overwritten while reading: go on
                    continue
                raise
            if not chunk:
                break
            lines = (carry + chunk).split(b"\n")
            carry = lines.pop()
            for line in lines:
                match = RECORD.match(line.decode(errors="replace"))
                if match:
                    out.append((int(match["seq"]), match["message"]))
    finally:
        os.close(fd)
    return out


def read_cursor(ctx: Context) -> Cursor:
    boot = current_boot(ctx)
    path = ctx.path(CURSOR)
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return Cursor(boot, -1)
    if data.get("boot") != boot:
        return Cursor(boot, -1)  # a new boot: its records are all new
    return Cursor(boot, int(data.get("sequence", -1)))


def current_boot(ctx: Context) -> str:
    path = ctx.path(BOOT_ID)
    return path.read_text().strip() if path.exists() else ""


def save_cursor(ctx: Context, cursor: Cursor) -> None:
    body = json.dumps({"boot": cursor.boot, "sequence": cursor.sequence}).encode()
    write_atomic(ctx.path(CURSOR), body, 0o644)


def new_findings(ctx: Context, health: Health) -> tuple[list[Finding], Cursor]:
    """Findings for what the kernel logged since the cursor (kernel_events: critical XIDs, most
    severe first, GPUs lost without an XID, fatal NVSwitch errors), and the cursor to save once
    they have been acted on."""
    cursor = read_cursor(ctx)
    latest = cursor.sequence
    messages = []
    for sequence, message in records(ctx):
        latest = max(latest, sequence)
        if sequence > cursor.sequence:
            messages.append(message)
    found = kernel_events.findings(messages, health.critical_xids, nvswitch=health.gpus > 0)
    return found, Cursor(cursor.boot, latest)


def lost_this_boot(ctx: Context, health: Health) -> list[Finding]:
    """GPUs the driver lost since this boot began, whatever the cursor says: the boot check
    names a GPU that fell off the bus at probe, not only counts it missing. (XIDs stay the
    periodic check's: a slurmd restarted after one was drained for it must not turn the
    controller's reboot into a replacement.)"""
    messages = [message for _, message in records(ctx)]
    found = kernel_events.findings(messages, health.critical_xids, nvswitch=False)
    return [f for f in found if f.check is Check.GPU_LOST]
