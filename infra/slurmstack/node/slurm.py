"""Slurm as the agent reads it: its node records (`scontrol show node -o`), parsed once into a
typed NodeRecord with the predicates the controller, the power programs, the health check and
the reaper ask of a node; the reasons Slurm sets itself, who Slurm is (SlurmUser), and Slurm's
times. Nothing else in the agent reads a record's State or Reason text."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..contract import reason_parts
from .context import AgentError, Context

# Slurm's times in the form SLURM_TIME_FORMAT=standard prints, on Slurm 22.05 and 23.11.
SCONTROL = ("env", "SLURM_TIME_FORMAT=standard", "scontrol")
SLURM_TIME = "%Y-%m-%dT%H:%M:%S"

# A key of `scontrol show node -o`: a word followed by "=", at the start or after a blank
# (values such as CfgTRES=cpu=64,mem=... hold "=" too, never after a blank).
_NODE_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_]*)=")
# "Reason=<text> [<user>@<time>]": slurmctld stamps a reason with who set it and when.
_REASON = re.compile(r"^(?P<text>.*?) \[(?P<user>[^\s@\]]+)@(?P<time>[^\s\]]+)\](?=\s|$)")
# Keys that may follow Reason on the line (Slurm 23.11 and later).
# A job's keys may hold a colon or a slash (AllocNode:Sid=, Socks/Node=).
_JOB_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_:/]*)=")
_AFTER_REASON = re.compile(r" (?:Comment|Extra|InstanceId|InstanceType|ReservationName)=")


def _key_values(text: str, into: dict[str, str], keys: re.Pattern[str] = _NODE_KEY) -> None:
    """Key=value pairs of a one-line record; a value runs to the next key (OS=Linux 6.8.0 #1
    SMP ... holds blanks). The first occurrence of a key wins."""
    matches = list(keys.finditer(text))
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


def parse_job_line(line: str) -> dict[str, str]:
    """One record of `scontrol show job -o` as a dict. A job's Reason is one word (Resources,
    None, ...), so no field is split off first, as a node's free-text Reason must be (read
    as a node's, it swallowed Partition, TRES and every field after it)."""
    fields: dict[str, str] = {}
    _key_values(line.rstrip("\n"), fields, _JOB_KEY)
    return fields


def slurm_time(value: str | None) -> float | None:
    """Seconds since the epoch from a Slurm time (local time, as scontrol prints it), or None
    for None, Unknown and anything else."""
    try:
        return datetime.datetime.strptime(value or "", SLURM_TIME).timestamp()
    except ValueError:
        return None


# Reasons slurmctld and slurmd set on their own (Slurm's src/slurmctld: ping_nodes.c,
# node_mgr.c, job_mgr.c, proc_req.c; slurmd's "Kill task failed").
SLURM_REASONS = frozenset(
    {
        "Not responding",
        "Kill task failed",
        "Node unexpectedly rebooted",
        "Prolog error",
        "Epilog error",
        "batch job complete failure",
    }
)


def slurm_users(ctx: Context) -> set[str]:
    """SlurmUser, by name and uid: who stamps the reasons slurmctld sets itself."""
    config = ctx.ok(*SCONTROL, "show", "config")
    match = re.search(r"^SlurmUser\s*=\s*([^\s(]+)(?:\((\d+)\))?", config, re.MULTILINE)
    if match is None:
        raise AgentError("`scontrol show config` names no SlurmUser")
    return {g for g in match.groups() if g}


# Flags of a node the power-saving programs (ResumeProgram/SuspendProgram) look after.
POWER_SAVING = frozenset(
    {"POWERED_DOWN", "POWERING_UP", "POWERING_DOWN", "POWER_DOWN", "POWER_UP", "FUTURE", "CLOUD"}
)
# Out of service: drained or draining, down or failed (sinfo's DRAINING and DRAINED are
# scontrol's DRAIN flag on a busy or an idle node).
OUT_OF_SERVICE = frozenset({"DRAIN", "DRAINING", "DRAINED", "DOWN", "FAIL"})
REBOOTING = frozenset({"REBOOT_REQUESTED", "REBOOT_ISSUED"})
BUSY = frozenset({"ALLOCATED", "MIXED", "COMPLETING"})


@dataclass(frozen=True)
class NodeRecord:
    """One node as `scontrol show node -o` printed it. A State such as
    ``IDLE+DRAIN+DYNAMIC_NORM`` is its base state (IDLE, DOWN, ALLOCATED, MIXED, FUTURE, ...)
    and its flags; the predicates below look at both, as Slurm may print either first."""

    name: str
    address: str
    base: str
    flags: frozenset[str]
    reason: str  # as Slurm keeps it, its stamp split off; >= 23.02 stacks them (``reasons``)
    reason_user: str | None
    features: frozenset[str]
    fields: Mapping[str, str]  # every key scontrol printed, as printed

    @classmethod
    def parse(cls, line: str) -> NodeRecord:
        return cls.of(parse_node_line(line))

    @classmethod
    def of(cls, fields: Mapping[str, str]) -> NodeRecord:
        base, *flags = fields.get("State", "").split("+")
        features = fields.get("AvailableFeatures", "")
        return cls(
            name=fields.get("NodeName", ""),
            address=fields.get("NodeAddr", ""),
            base=base,
            flags=frozenset(flags),
            reason=fields.get("Reason", ""),
            reason_user=fields.get("ReasonUser"),
            features=frozenset(f for f in features.split(",") if f),
            fields=dict(fields),
        )

    @property
    def states(self) -> frozenset[str]:
        return self.flags | {self.base}

    @property
    def state(self) -> str:
        """The State as scontrol printed it."""
        return self.fields.get("State", "")

    @property
    def reason_time(self) -> float | None:
        """When the reason was set (its stamp), read when asked: Slurm prints local time."""
        return self.time("ReasonTime")

    @property
    def reasons(self) -> tuple[str, ...]:
        """The reasons Slurm (>= 23.02) stacked into one, oldest first, without the notes the
        controller appends (slurmstack.contract.reason_parts)."""
        return reason_parts(self.reason)

    @property
    def out_of_service(self) -> bool:
        return bool(OUT_OF_SERVICE & self.states)

    @property
    def rebooting(self) -> bool:
        return bool(REBOOTING & self.states)

    @property
    def power_saving(self) -> bool:
        """Looked after by the power-saving programs (powered down, powering up or down, a
        FUTURE or CLOUD node)."""
        return bool(POWER_SAVING & self.states)

    @property
    def powered_down(self) -> bool:
        """Powered down and staying so (no power up or down under way)."""
        return "POWERED_DOWN" in self.flags and not self.flags & {"POWERING_UP", "POWERING_DOWN"}

    @property
    def busy(self) -> bool:
        return bool(BUSY & self.states) or self.fields.get("CPUAlloc", "0") not in ("", "0")

    @property
    def allocated(self) -> bool:
        """Anything allocated on it: CPUs or any TRES."""
        return self.fields.get("CPUAlloc", "0") != "0" or bool(self.fields.get("AllocTRES", ""))

    def time(self, key: str) -> float | None:
        """A time field (LastBusyTime, SlurmdStartTime, ...) in seconds since the epoch."""
        return slurm_time(self.fields.get(key))


def slurm_nodes(ctx: Context, details: bool = False) -> list[NodeRecord]:
    """Every node record, from `scontrol show node` in one-line form (``details``: with
    GresUsed, the GRES its jobs hold)."""
    out = ctx.ok(
        *SCONTROL, "--all", *(["--details"] if details else []), "--oneliner", "show", "node"
    )
    return [NodeRecord.parse(line) for line in out.splitlines() if line.startswith("NodeName=")]
