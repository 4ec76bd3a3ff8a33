"""The cyclic garbage collector is paused while the Pulumi program runs.

Why: the program allocates hundreds of thousands of small container objects (an Output,
its future, the future's callbacks and context copies, per resource property) and nearly
all of them stay alive until the program ends, so the collector's passes reclaim almost
nothing; its full passes also walk every object of the pulumi_aws modules loaded before.
Measured with ``benchmarks/bench_goals.py`` (offline engine, this machine): the collector
took about 70% of a 64-pool run and 60% of the p5 example's; raising the thresholds
recovers most of it, pausing recovers the most.

Why it is safe: reference counting still frees every object the moment its last
reference goes; only garbage held in reference cycles (finished futures and their
callbacks, exception tracebacks) waits. The program's allocations grow with the number of
resources (pools, not nodes), and the cyclic part is small: a 64-pool run peaks at the
same resident memory paused as collected (within 2%, measured with the same benchmark).
``pulumi preview``/``up`` run the program in a process that exits when the program ends;
the offline engine resumes the collector after each run (``collector_paused``).

At exit the interpreter still runs one last collection over every object left, paused or
not: 0.4 s after a one-pool plan, 1 s after a 64-pool one, to free memory the operating
system takes back anyway. A process that paused the collector for the program therefore
freezes everything at exit (``gc.freeze``: the final pass skips frozen objects). What
that skips is only the finalizers of objects in unreachable cycles; open files are not
among them (standard streams are flushed by the interpreter, logging by its own handler).
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager

_freeze_registered = False


def pause_for_program() -> None:
    """Pause the collector for the rest of this process (the program's entry point, and
    `slurmstack plan`), and skip the interpreter's final collection at exit."""
    global _freeze_registered
    gc.disable()
    if not _freeze_registered:
        atexit.register(gc.freeze)
        _freeze_registered = True


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the collector for one run of the program, then restore what the caller had."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
