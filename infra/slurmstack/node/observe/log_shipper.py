"""follow-logs: the node's log files (contract HEAD_LOG_FILES / WORKER_LOG_FILES) into the
cluster's CloudWatch Logs groups, one stream per instance (its id), continuously (a service).

Each file is read from where the last pass stopped: its inode and byte offset are kept in
LOG_SHIPPER_STATE_PATH and advanced only after CloudWatch Logs took the lines, so a restart
sends nothing twice (a crash between the call and the write can send one batch again). A
file renamed away by logrotate (same inode, another name in the directory) is finished
before its successor is started; a file truncated in place (copytruncate) is read again from
its start. Only whole lines are sent; an unfinished last line waits for its newline.

PutLogEvents' limits (CloudWatch Logs API reference, PutLogEvents: docs.aws.amazon.com/
AmazonCloudWatchLogs/latest/APIReference/API_PutLogEvents.html): at most 10,000 events and
1,048,576 bytes a batch, counted as each message's UTF-8 bytes plus 26; events in
chronological order; no event over 256 KB (newer revisions allow 1 MB; the older, smaller
limit holds for both). A longer line is sent as several events."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...contract import (
    HEAD_LOG_FILES,
    LOG_SHIPPER_INTERVAL_SECONDS,
    LOG_SHIPPER_STATE_PATH,
    LOGIN_LOG_FILES,
    WORKER_LOG_FILES,
    LogSource,
    NodeConfig,
    is_login_role,
    log_group_name,
)
from ..context import Context, log, write_atomic

MAX_BATCH_EVENTS = 10_000
MAX_BATCH_BYTES = 1_048_576
EVENT_OVERHEAD_BYTES = 26
MAX_EVENT_BYTES = 256 * 1024 - EVENT_OVERHEAD_BYTES  # a message, with its overhead, <= 256 KiB
# Read at most this much of one file a pass: a large backlog goes out over several passes,
# in bounded memory.
MAX_READ_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Line:
    message: str
    end: int  # the file's offset just after the line: where reading resumes once it is sent

    @property
    def size(self) -> int:
        return len(self.message.encode()) + EVENT_OVERHEAD_BYTES


def pieces(text: str, limit: int = MAX_EVENT_BYTES) -> list[str]:
    """``text`` cut into messages of at most ``limit`` UTF-8 bytes, never inside a character."""
    data, out = text.encode(), []
    while len(data) > limit:
        cut = limit
        while data[cut] & 0xC0 == 0x80:  # a continuation byte: the character starts before
            cut -= 1
        out.append(data[:cut].decode())
        data = data[cut:]
    if data:
        out.append(data.decode())
    return out


def lines_of(data: bytes, start: int, finished: bool) -> list[Line]:
    """The whole lines of ``data`` (read at offset ``start``); an unfinished last line too when
    the file is ``finished`` (rotated away) or it is already too long for one event."""
    out, position = [], 0
    while position < len(data):
        newline = data.find(b"\n", position)
        if newline < 0:
            if not finished and len(data) - position <= MAX_EVENT_BYTES:
                break
            newline = len(data) - 1 if finished else position + MAX_EVENT_BYTES - 1
            end, text = newline + 1, data[position : newline + 1]
        else:
            end, text = newline + 1, data[position:newline]
        message = text.decode(errors="replace").rstrip("\r\n")
        parts = pieces(message) if message else []
        for i, part in enumerate(parts):
            # Every piece but the last resumes the same line: only the last one moves on.
            out.append(Line(part, start + (end if i == len(parts) - 1 else position)))
        if not parts:
            out.append(Line("", start + end))  # nothing to send (CloudWatch takes none empty)
        position = end
    return out


def batches(lines: list[Line]) -> Iterator[list[Line]]:
    """``lines`` in PutLogEvents-sized batches, in order."""
    batch: list[Line] = []
    size = 0
    for line in lines:
        if batch and (len(batch) >= MAX_BATCH_EVENTS or size + line.size > MAX_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(line)
        size += line.size
    if batch:
        yield batch


def log_files(config: NodeConfig) -> Mapping[LogSource, tuple[str, ...]]:
    """The files this kind of node follows: the head's, a login node's or a worker's."""
    if config.is_head:
        return HEAD_LOG_FILES
    if is_login_role(config.role):
        return LOGIN_LOG_FILES
    return WORKER_LOG_FILES


class Shipper:
    """One node's follower: its files, its cursors, its stream."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        config = ctx.config()
        self.cluster = config.cluster
        self.files = log_files(config)
        self.stream = ctx.imds("instance-id")
        self.state_path = ctx.path(LOG_SHIPPER_STATE_PATH)
        self.cursors: dict[str, dict[str, int]] = (
            json.loads(self.state_path.read_text()) if self.state_path.exists() else {}
        )
        self.streams: set[str] = set()
        self._logs: Any = None

    def logs(self) -> Any:
        if self._logs is None:
            self._logs = self.ctx.aws.logs()
        return self._logs

    def ship(self) -> int:
        """One pass over every file; returns the events sent."""
        from botocore.exceptions import BotoCoreError, ClientError

        sent, failed = 0, None
        for source, paths in self.files.items():
            for node_path in paths:
                try:
                    sent += self._follow(source, node_path)
                except (BotoCoreError, ClientError) as exc:  # one group's trouble: not the rest's
                    failed = failed or exc
        if failed is not None:
            raise failed
        return sent

    def _save(self, node_path: str, inode: int, offset: int) -> None:
        self.cursors[node_path] = {"inode": inode, "offset": offset}
        data = json.dumps(self.cursors, sort_keys=True, indent=1).encode()
        write_atomic(self.state_path, data, 0o644)

    def _follow(self, source: LogSource, node_path: str) -> int:
        path = self.ctx.path(node_path)
        try:
            current = path.stat()
        except FileNotFoundError:
            return 0
        cursor = self.cursors.get(node_path)
        sent = 0
        if cursor is not None and cursor["inode"] != current.st_ino:
            rotated = _renamed(path, cursor["inode"])
            if rotated is not None:  # finish the old file first, in order
                sent, more = self._send(source, node_path, rotated, cursor["inode"],
                                        cursor["offset"], finished=True)  # fmt: skip
                if more:  # a long backlog: the rest of it next pass, still before the new file
                    return sent
            cursor = None
        offset = 0 if cursor is None else cursor["offset"]
        if offset > current.st_size:  # truncated in place: its new lines start at 0
            offset = 0
        if cursor is None or offset != cursor["offset"]:
            self._save(node_path, current.st_ino, offset)
        return sent + self._send(source, node_path, path, current.st_ino, offset, False)[0]

    def _send(
        self, source: LogSource, node_path: str, path: Path, inode: int, offset: int,
        finished: bool,
    ) -> tuple[int, bool]:  # fmt: skip
        """Send what ``path`` has past ``offset``: the events sent, and whether more is left
        than one read takes."""
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read(MAX_READ_BYTES)
        more = len(data) == MAX_READ_BYTES
        finished = finished and not more
        group = log_group_name(self.cluster, source)
        timestamp = int(self.ctx.clock() * 1000)  # one pass, one time: in order by construction
        sent = 0
        for batch in batches(lines_of(data, offset, finished)):
            events = [{"timestamp": timestamp, "message": ln.message} for ln in batch if ln.message]
            if events:
                self._put(group, events)
                sent += len(events)
            self._save(node_path, inode, batch[-1].end)
        return sent, more

    def _put(self, group: str, events: list[dict[str, Any]]) -> None:
        logs = self.logs()
        if group not in self.streams:
            with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
                logs.create_log_stream(logGroupName=group, logStreamName=self.stream)
            self.streams.add(group)
        answer = logs.put_log_events(logGroupName=group, logStreamName=self.stream,
                                     logEvents=events)  # fmt: skip
        rejected = answer.get("rejectedLogEventsInfo")
        if rejected:
            log(f"CloudWatch Logs rejected some events of {group}: {rejected}")


def _renamed(path: Path, inode: int) -> Path | None:
    """The file of ``inode`` beside ``path`` under another name (logrotate's path.1, or a
    dated name), or None (gone, or compressed into a new file)."""
    try:
        siblings = list(os.scandir(path.parent))
    except FileNotFoundError:
        return None
    for entry in siblings:
        if entry.name.startswith(path.name + ".") and entry.inode() == inode:
            return Path(entry.path)
    return None


def follow(ctx: Context, once: bool = False) -> int:
    """The service: a pass every LOG_SHIPPER_INTERVAL_SECONDS. A pass that fails (no network,
    throttled) is logged and tried again; the cursors have not moved."""
    from botocore.exceptions import BotoCoreError, ClientError

    shipper = Shipper(ctx)
    total = 0
    while True:
        try:
            total += shipper.ship()
        except (BotoCoreError, ClientError, OSError) as exc:
            log(f"follow-logs: {exc}; trying again in {LOG_SHIPPER_INTERVAL_SECONDS} s")
            if once:
                raise
        if once:
            return total
        ctx.sleep(LOG_SHIPPER_INTERVAL_SECONDS)
