"""nccl-tests' output (all_reduce_perf and its siblings) as a verdict.

The format is nccl-tests' own (src/util.cu, writeDeviceReport / writeResultHeader /
writeResultFooter, and the failure lines of src/common.h): ``#`` comment lines (the run's
settings, one ``#  Rank`` line per rank naming its host, the table header, the footer's
``# Out of bounds values`` and ``# Avg bus bandwidth``), one row per message size with the
out-of-place and in-place time, algbw, busbw and #wrong, and on failure
``<host>: Test NCCL failure <file>:<line> '<error>'`` and `` .. <host> pid <pid>: Test failure``
lines; srun adds ``srun: error: <node>: task <n>: Exited with exit code <c>``. The launcher's
label on each line is taken off first: srun's ``-l`` (``<task>: ``), Open MPI's
``--tag-output`` (``[1,<rank>]<stdout>:``), ``-prepend-rank`` (``[<rank>] ``). NCCL's own
warnings (nccl_log) name the peer a host lost, which the verdict puts on a host of the run.

A run passes when it completed (the footer is there, no failure line), every result is
correct (no wrong element, no out-of-bounds value) and the out-of-place bus bandwidth at the
threshold's message size reaches the threshold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .nccl_log import NcclLog

_LABEL = re.compile(r"^\s*(?:\[\d+,\d+\]<std(?:out|err)>:|\[\d+\]\s|\d+:\s?)")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)")
_FAILURE = re.compile(
    r"^(?P<host>\S+): Test (?P<kind>NCCL|CUDA) failure (?P<where>\S+) '(?P<what>.*)'"
)
_TRACE = re.compile(r"^ \.\. (?P<host>\S+) pid \d+: Test failure")
_TIMEOUT = re.compile(r"^(?P<host>\S+): Test timeout")
_SRUN_TASK = re.compile(r"^srun: error: (?P<node>\S+): tasks? [\d,\-]+: (?P<what>.*)$")
_OUT_OF_BOUNDS = re.compile(r"^# Out of bounds values\s*:\s*(\d+)")
_AVG_BUSBW = re.compile(r"^# Avg bus bandwidth\s*:\s*([0-9.eE+\-]+)")


@dataclass(frozen=True)
class Row:
    """One message size: bytes, and the out-of-place and in-place bus bandwidth (GB/s) and
    wrong elements (None when the run did not check: ``-c 0`` prints N/A)."""

    size: int
    busbw_out: float
    busbw_in: float
    wrong_out: int | None
    wrong_in: int | None


@dataclass(frozen=True)
class Failure:
    host: str
    message: str


@dataclass
class Run:
    """What one nccl-tests run printed."""

    ranks: dict[int, str] = field(default_factory=dict)  # rank -> host
    rows: list[Row] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    out_of_bounds: int | None = None
    avg_busbw: float | None = None  # the footer's average (None: the run did not finish)
    nccl: NcclLog = field(default_factory=NcclLog)

    @property
    def completed(self) -> bool:
        return self.avg_busbw is not None and not self.failures

    @property
    def hosts(self) -> list[str]:
        return sorted(set(self.ranks.values()))

    def row(self, size: int) -> Row | None:
        return next((r for r in self.rows if r.size == size), None)

    @property
    def wrong(self) -> list[Row]:
        return [r for r in self.rows if (r.wrong_out or 0) > 0 or (r.wrong_in or 0) > 0]


def _wrong(token: str) -> int | None:
    return None if token == "N/A" else int(float(token))


def _row(line: str) -> Row | None:
    """A result row: size count type redop [root] then two (time algbw busbw #wrong) groups
    (nccl-tests before 2.11 print no root column)."""
    parts = line.split()
    if len(parts) not in (12, 13) or not parts[0].isdigit():
        return None
    values = parts[-8:]
    try:
        return Row(
            size=int(parts[0]),
            busbw_out=float(values[2]),
            busbw_in=float(values[6]),
            wrong_out=_wrong(values[3]),
            wrong_in=_wrong(values[7]),
        )
    except ValueError:
        return None


def parse(text: str) -> Run:
    run = Run()
    for raw in text.splitlines():
        line = _LABEL.sub("", raw, count=1)
        if match := _RANK.match(line):
            run.ranks[int(match[1])] = match[2]
        elif match := _OUT_OF_BOUNDS.match(line):
            run.out_of_bounds = int(match[1])
        elif match := _AVG_BUSBW.match(line):
            run.avg_busbw = float(match[1])
        elif match := _FAILURE.match(line):
            what = ": ".join(p for p in match["what"].split(" / ") if p.strip())
            run.failures.append(Failure(match["host"], f"{match['kind']} failure: {what}"))
        elif match := _TIMEOUT.match(line):
            run.failures.append(Failure(match["host"], "test timeout"))
        elif match := _SRUN_TASK.match(line):
            run.failures.append(Failure(match["node"], match["what"]))
        elif _TRACE.match(line) or line.startswith("#") or run.nccl.read(line):
            continue
        elif (row := _row(line)) is not None:
            run.rows.append(row)
    return run


def gbps(value: float) -> str:
    """A bandwidth as the reasons and reports print it: 142, 62.7, 6.25."""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


@dataclass(frozen=True)
class Verdict:
    ok: bool
    detail: str  # one line: the figure and the threshold, or what went wrong
    busbw_gbps: float | None = None  # out-of-place, at the judged message size
    failed_hosts: tuple[str, ...] = ()  # hosts named by failure lines


def judge(run: Run, min_busbw_gbps: float | None, message_bytes: int) -> Verdict:
    """Pass or fail, with the figure that decided it. Without a threshold (a pool without EFA)
    the run must complete and be correct, at any speed."""
    known = {*run.ranks.values(), *(f.host for f in run.failures)}
    blamed = run.nccl.blamed(known)
    named = (blamed[1],) if blamed and blamed[1] else ()
    peer = f"; {run.nccl.describe(known)}" if blamed else ""
    if run.failures:
        first = run.failures[0]
        hosts = tuple(dict.fromkeys([*named, *(f.host for f in run.failures)]))
        detail = f"did not complete: {first.message} (on {first.host}){peer}"
        return Verdict(False, detail, None, hosts)
    if run.avg_busbw is None:
        largest = max((r.size for r in run.rows), default=0)
        ends = f"output ends after {largest} B" if run.rows else "no result"
        detail = f"did not complete: {ends}, no summary{peer}"
        return Verdict(False, detail, None, named)
    if run.wrong or run.out_of_bounds:
        where = f" at {run.wrong[0].size} B" if run.wrong else ""
        return Verdict(False, f"wrong results{where}: data corrupted between GPUs")
    row = run.row(message_bytes)
    if row is None:
        largest = max((r.size for r in run.rows), default=0)
        return Verdict(
            False, f"no result at {message_bytes} B (largest: {largest} B): run with -e 2G"
        )
    if min_busbw_gbps is None:
        return Verdict(
            True, f"{gbps(row.busbw_out)} GB/s busbw (no threshold: no EFA)", row.busbw_out
        )
    if row.busbw_out < min_busbw_gbps:
        detail = f"{gbps(row.busbw_out)} GB/s busbw, below {gbps(min_busbw_gbps)}"
        return Verdict(False, detail, row.busbw_out)
    detail = f"{gbps(row.busbw_out)} GB/s busbw, at least {gbps(min_busbw_gbps)}"
    return Verdict(True, detail, row.busbw_out)
