"""What sacctmgr prints in its parsable form (-n -P), read into plain values.

sacctmgr writes limits as TRES lists ('cpu=64,gres/gpu=16,mem=1000M', memory with a unit),
wall times as [days-]hours:minutes:seconds, and folds account and QoS descriptions to lowercase.
Read the same on Slurm 22.05 and 23.11.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...contract import ROOT_ACCOUNT

QOS_FIELDS = "name,description,priority,maxwall,maxjobspu,maxtrespu,maxtres,grptres"
ASSOC_FIELDS = "account,user,parentname,fairshare,qos,defaultqos,grptres"
_MEM_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024, "P": 1024**3}
_WALL = re.compile(r"^(?:(\d+)-)?(\d+):(\d+):(\d+)$")


def parse_tres(text: str) -> dict[str, int]:
    """'cpu=64,gres/gpu=16,mem=1000M' -> {'cpu': 64, 'gres/gpu': 16, 'mem': 1000} (mem in MiB)."""
    out: dict[str, int] = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        unit = value[-1:].upper()
        if unit in _MEM_UNITS:
            out[name] = round(float(value[:-1]) * _MEM_UNITS[unit])
        else:
            out[name] = int(value)
    return out


def parse_wall_minutes(text: str) -> int | None:
    """'2-00:00:00' or '01:30:00' -> minutes (a started minute counts); '' -> None."""
    match = _WALL.match(text.strip())
    if not match:
        return None
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return days * 1440 + hours * 60 + minutes + (1 if seconds else 0)


def _fields(line: str, count: int) -> list[str]:
    return (line.split("|") + [""] * count)[:count]


def parse_qos(text: str) -> dict[str, dict[str, Any]]:
    """`sacctmgr -n -P show qos format=<QOS_FIELDS>` -> name -> settings."""
    out: dict[str, dict[str, Any]] = {}
    for line in filter(None, text.splitlines()):
        name, desc, prio, wall, jobs, per_user, per_job, grp = _fields(line, 8)
        out[name] = {
            "description": desc,
            "priority": int(prio or 0),
            "max_wall_minutes": parse_wall_minutes(wall),
            "max_jobs_per_user": int(jobs) if jobs.strip() else None,
            "max_tres_per_user": parse_tres(per_user),
            "max_tres_per_job": parse_tres(per_job),
            "grp_tres": parse_tres(grp),
        }
    return out


@dataclass
class Observed:
    """What slurmdbd holds for one cluster."""

    qos: dict[str, dict[str, Any]] = field(default_factory=dict)
    accounts: dict[str, dict[str, Any]] = field(default_factory=dict)  # account associations
    members: set[tuple[str, str]] = field(default_factory=set)  # (user, account)
    default_accounts: dict[str, str] = field(default_factory=dict)  # user -> default account
    descriptions: dict[str, str] = field(default_factory=dict)  # account -> description

    def users(self) -> set[str]:
        return {user for user, _ in self.members}


def parse_associations(text: str, observed: Observed) -> None:
    """`sacctmgr -n -P show assoc where cluster=C format=<ASSOC_FIELDS>`: account associations
    (no user) with their settings, and users' memberships. root's own association is Slurm's."""
    for line in filter(None, text.splitlines()):
        account, user, parent, share, qos, default_qos, grp = _fields(line, 7)
        if user:
            observed.members.add((user, account))
        elif account != ROOT_ACCOUNT:
            observed.accounts[account] = {
                "parent": parent or ROOT_ACCOUNT,
                "fairshare": int(share) if share.isdigit() else share,
                "qos": sorted(filter(None, qos.split(","))),
                "default_qos": default_qos or None,
                "grp_tres": parse_tres(grp),
            }


def parse_pairs(text: str) -> dict[str, str]:
    """Two-field parsable lines ('alice|pretrain') -> {'alice': 'pretrain'}."""
    out = {}
    for line in filter(None, text.splitlines()):
        key, _, value = line.partition("|")
        out[key] = value
    return out
