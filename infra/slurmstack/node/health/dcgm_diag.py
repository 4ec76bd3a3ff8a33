"""`dcgmi diag`'s result table, read as the failed tests it reports.

The table (samples in tests/unit/node/health/data/dcgmi) has a test name in its first column and
the result in its second; a test's later rows leave the first column blank:

    | GPU Memory                | Pass - GPU: 1                                  |   DCGM 3
    |                           | Fail - GPU: 0                                  |
    | Warning                   | GPU 0 Error using CUDA API cuCtxCreate Check   |
    |                           | DCGM and system logs for errors. Reset GPU. R  |
    | memory                    | Fail                                           |   DCGM 4
    |                           | GPU1: Fail                                     |

So a failure on a continuation row belongs to the test named above it, and ``Warning`` and
``Info`` rows (and their continuations) explain the test before them rather than name one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ROW = re.compile(r"^\|(?P<name>[^|]*)\|(?P<result>[^|]*)\|\s*$")
NOTES = frozenset({"Warning", "Info"})
# "Fail", "Fail - GPU: 0", "Fail - GPUs: 0, 3", "GPU1: Fail".
FAIL = re.compile(
    r"^(?:Fail(?:\s*-\s*GPUs?:\s*(?P<gpus>[\d,\s]+))?|GPU(?P<gpu>\d+):\s*Fail)\b", re.IGNORECASE
)


@dataclass
class FailedTest:
    test: str
    gpus: list[str] = field(default_factory=list)
    warning_rows: list[str] = field(default_factory=list)  # of the Warning that followed it
    width: int = 0  # of the result column: a row shorter than this ended at a space

    @property
    def warning(self) -> str:
        """The warning's rows joined back: dcgmi wraps a cell at the column's width, mid-word;
        a row shorter than that ended at a space the wrap dropped."""
        text = previous = ""
        for row in self.warning_rows:
            text += row if not text or len(previous) >= self.width else f" {row}"
            previous = row
        return text

    def describe(self, warning_characters: int = 100) -> str:
        where = f" on GPU {', '.join(self.gpus)}" if self.gpus else ""
        why = f": {self.warning[:warning_characters].rstrip()}" if self.warning else ""
        return f"{self.test}{where}{why}"


def failed_tests(table: str) -> list[FailedTest]:
    """The tests the table marks failed, in its order, each with the GPUs named on its
    failing rows and the warning that followed it."""
    rows = [(r["name"].strip(), r["result"].strip()) if r else None for r in _rows(table)]
    width = max((len(row[1]) for row in rows if row), default=0)
    failed: dict[str, FailedTest] = {}
    test = ""  # the test the current row belongs to
    note: str | None = None  # the Warning/Info row the current row continues
    collecting = False  # the current rows are the failed test's first warning
    for row in rows:
        if row is None:  # a border (+---+, |----- Section ---|)
            note, collecting = None, False
            continue
        name, result = row
        if name in NOTES:
            note = name
            collecting = name == "Warning" and test in failed and not failed[test].warning_rows
        elif name:
            test, note, collecting = name, None, False
        if note is not None:
            if collecting:
                failed[test].warning_rows.append(result)
            continue
        match = FAIL.match(result)
        if match and test:
            entry = failed.setdefault(test, FailedTest(test, width=width))
            gpus = match["gpus"] or match["gpu"] or ""
            entry.gpus += [g.strip() for g in gpus.split(",") if g.strip()]
    return list(failed.values())


def _rows(table: str) -> list[re.Match[str] | None]:
    """The table's rows (None for a border), from its first row on."""
    lines = table.splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith(("|", "+"))), len(lines))
    return [ROW.match(line.strip()) for line in lines[first:] if line.strip()]
