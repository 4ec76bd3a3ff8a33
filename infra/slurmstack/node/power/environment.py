"""What a power program starts with: slurmctld gives the programs it runs no PATH and nothing
but SLURM_CONF (and closes their output on Slurm 22.05, captures it on 23.02 and later), so the
agent sets its own PATH, takes extra environment from POWER_ENV_PATH (an HTTPS proxy, an EC2
endpoint) when it exists, and logs to POWER_LOG_PATH, next to slurmctld's own log."""

from __future__ import annotations

import datetime
import os
import sys
from typing import TextIO

from ...contract import COMMAND_DIRS, POWER_ENV_PATH, POWER_LOG_PATH, parse_env
from ..context import Context


def prepare(ctx: Context, program: str) -> None:
    """PATH, the power environment file, and the log (stderr) for ``program``."""
    os.environ.setdefault("PATH", ":".join(COMMAND_DIRS))
    env_file = ctx.path(POWER_ENV_PATH)
    if env_file.is_file():
        for key, value in parse_env(env_file.read_text()).items():
            os.environ.setdefault(key, value)
    log_file = _open_log(ctx)
    if log_file is not None:
        sys.stderr = _Stamped(log_file, program)


def _open_log(ctx: Context) -> TextIO | None:
    path = ctx.path(POWER_LOG_PATH)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, "a", buffering=1)
    except OSError:
        return None  # keep stderr (a test, or a directory SlurmUser cannot write)


class _Stamped:
    """A line-buffered stream that starts each line with the time (UTC), the program and pid."""

    def __init__(self, stream: TextIO, program: str) -> None:
        self._stream = stream
        self._program = program
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            self._stream.write(f"{now} {self._program}[{os.getpid()}]: {line}\n")
        return len(text)

    def flush(self) -> None:
        self._stream.flush()
