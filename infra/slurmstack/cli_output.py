"""When the command's output cannot be written: a closed pipe (`slurmstack plan | head -1`)
ends quietly, a full disk or another write error (`plan > /dev/full`) with one line on stderr;
neither with a traceback nor with exit code 1, which means an invalid definition."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Any

import typer
from typer.core import TyperGroup

EXIT_OUTPUT_FAILED = 74  # sysexits' EX_IOERR: an input/output error
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell shows for a writer whose reader left

# What writing to a stream can fail with (a file that cannot be opened names its path, and is
# the command's own business).
WRITE_ERRORS = {errno.EPIPE, errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def _silence_stdout() -> None:
    """Send what is left of the output nowhere, so the interpreter's last flush at exit does
    not fail a second time (Python's documented way out of a broken pipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def output_failed(exc: OSError) -> int | None:
    """The exit code for a failed write of the output (after saying so), or None when
    ``exc`` is no such failure."""
    if exc.filename is not None or exc.errno not in WRITE_ERRORS:
        return None
    _silence_stdout()
    if exc.errno == errno.EPIPE:
        return EXIT_BROKEN_PIPE
    with contextlib.suppress(OSError):  # stderr may be on the same full disk
        print(f"slurmstack: cannot write the output: {exc.strerror}", file=sys.stderr)
    return EXIT_OUTPUT_FAILED


def flushed(code: Any) -> Any:
    """``code`` once the output is out, or the code of the failure that stopped it."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        failed = output_failed(exc)
        if failed is None:
            raise
        return failed
    return code


class Commands(TyperGroup):
    """The CLI's commands, with a failed write of their output turned into its exit code
    (before click's own handling, which exits 1 on a broken pipe)."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            failed = output_failed(exc)
            if failed is None:
                raise
            raise typer.Exit(failed) from None


def output_console() -> Any:
    """rich's console for the command's output (rich loads only for the commands that draw
    tables). rich ends a broken pipe with an exit code 1 of its own; this console hands it to
    ``Commands`` like any other failed write."""
    from rich.console import Console

    class OutputConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return OutputConsole()
