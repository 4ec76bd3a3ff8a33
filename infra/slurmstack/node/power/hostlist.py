"""Slurm's hostlists, read without a process: ``gpu-e[1-3,7],cpu-e[01-02]`` is gpu-e1, gpu-e2,
gpu-e3, gpu-e7, cpu-e01, cpu-e02 (slurm.conf(5), "NodeName": numeric ranges in brackets, several
brackets a name, a range's numbers as wide as its first). slurmctld hands the power programs a
hostlist of a thousand nodes and a resume file with one per job: a fork of `scontrol show
hostnames` for each would cost more than reading them."""

from __future__ import annotations

import itertools
import re

# One bracket: digits, ranges of digits, separated by commas.
_BRACKET = re.compile(r"\[([0-9,\-]+)\]")


class HostlistError(ValueError):
    """Not a hostlist this reader knows (the caller asks scontrol)."""


def _split(hostlist: str) -> list[str]:
    """The comma-separated parts of a hostlist, commas inside brackets kept."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(hostlist):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in {hostlist!r}")
        elif char == "," and depth == 0:
            parts.append(hostlist[start:i])
            start = i + 1
    if depth:
        raise HostlistError(f"unbalanced '[' in {hostlist!r}")
    parts.append(hostlist[start:])
    return [p.strip() for p in parts if p.strip()]


def _numbers(ranges: str) -> list[str]:
    out = []
    for item in ranges.split(","):
        low, dash, high = item.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise HostlistError(f"not a range: {item!r}")
        width = len(low)
        stop = int(high) if dash else int(low)
        if stop < int(low):
            raise HostlistError(f"a range that runs backwards: {item!r}")
        out += [str(n).zfill(width) for n in range(int(low), stop + 1)]
    return out


def expand(hostlist: str) -> list[str]:
    """The node names of ``hostlist``, in its order."""
    names: list[str] = []
    for part in _split(hostlist):
        pieces = _BRACKET.split(part)  # text, ranges, text, ranges, ..., text
        if any("[" in text or "]" in text for text in pieces[::2]):
            raise HostlistError(f"not a hostlist: {part!r}")
        choices = [[p] if i % 2 == 0 else _numbers(p) for i, p in enumerate(pieces)]
        names += ["".join(combo) for combo in itertools.product(*choices)]
    return names
