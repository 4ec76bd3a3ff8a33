"""Slurm's node records as `scontrol show node -o` prints them, and Slurm's times."""

from __future__ import annotations

import datetime
import re

# Slurm's times in the form SLURM_TIME_FORMAT=standard prints, on Slurm 22.05 and 23.11.
SCONTROL = ("env", "SLURM_TIME_FORMAT=standard", "scontrol")
SLURM_TIME = "%Y-%m-%dT%H:%M:%S"

# A key of `scontrol show node -o`: a word followed by "=", at the start or after a blank
# (values such as CfgTRES=cpu=64,mem=... hold "=" too, never after a blank).
_NODE_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_]*)=")
# "Reason=<text> [<user>@<time>]": slurmctld stamps a reason with who set it and when.
_REASON = re.compile(r"^(?P<text>.*?) \[(?P<user>[^\s@\]]+)@(?P<time>[^\s\]]+)\](?=\s|$)")
# Keys that may follow Reason on the line (Slurm 23.11 and later).
_AFTER_REASON = re.compile(r" (?:Comment|Extra|InstanceId|InstanceType|ReservationName)=")


def _key_values(text: str, into: dict[str, str]) -> None:
    """Key=value pairs of a one-line record; a value runs to the next key (OS=Linux 6.8.0 #1
    SMP ... holds blanks). The first occurrence of a key wins."""
    matches = list(_NODE_KEY.finditer(text))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        into.setdefault(match.group(1), text[match.end() : end].strip())


def parse_node_line(line: str) -> dict[str, str]:
    """One record of `scontrol show node -o` (Slurm 22.05 and 23.11) as a dict. Reason, free
    text set by whoever set it, is split off first: its stamp becomes ReasonUser and
    ReasonTime, and nothing in it can pass for another field."""
    fields: dict[str, str] = {}
    head, marker, tail = line.rstrip("\n").partition(" Reason=")
    _key_values(head, fields)
    if marker:
        stamped = _REASON.match(tail)
        if stamped:
            fields["Reason"] = stamped["text"]
            fields["ReasonUser"] = stamped["user"]
            fields["ReasonTime"] = stamped["time"]
            rest = tail[stamped.end() :]
        else:
            after = _AFTER_REASON.search(tail)
            fields["Reason"] = (tail[: after.start()] if after else tail).strip()
            rest = tail[after.start() :] if after else ""
        _key_values(rest, fields)
    return fields


def slurm_time(value: str | None) -> float | None:
    """Seconds since the epoch from a Slurm time (local time, as scontrol prints it), or None
    for None, Unknown and anything else."""
    try:
        return datetime.datetime.strptime(value or "", SLURM_TIME).timestamp()
    except ValueError:
        return None
