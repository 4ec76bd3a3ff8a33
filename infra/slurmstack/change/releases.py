"""`plan NEW --against OLD`, Slurm's side: which release each daemon of the old deployment runs,
and what a change of them is refused for or warned of.

Refused: a release going back or past Slurm's compatibility window
(checks.slurm.slurm_upgrade_findings). Warned: settings the new slurm.conf has only for a
release newer than one still running until its pool's refresh. Every slurmd reads the whole file (configless,
from slurmctld) and a 24.11.5 slurmd exits at a key it does not know ("Parsing error at
unrecognized key ... fatal: Unable to process configuration file", at a reconfigure under a
26.05.5 slurmctld: tests/slurm/test_upgrade.py), so such a pool's nodes lose their slurmd at the
reconfigure the change sends until their instances are replaced (docs/slurm-versions.md,
"Found, open").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from slurmstack.checks.common import warning
from slurmstack.checks.slurm import slurm_upgrade_findings
from slurmstack.contract import SLURM_CONF_PATH
from slurmstack.findings import Finding, Level
from slurmstack.plan import build_plan
from slurmstack.plan.slurm import pool_slurm_version
from slurmstack.render import head_files
from slurmstack.spec import ClusterSpec


@dataclass(frozen=True)
class DeployedSlurm:
    """The releases of a deployment: the head's (slurmdbd, slurmctld) and each pool's slurmd."""

    head: str
    pools: Mapping[str, str]


def from_spec(spec: ClusterSpec) -> DeployedSlurm:
    return DeployedSlurm(
        spec.slurm.version, {p.name: pool_slurm_version(spec, p) for p in spec.pools}
    )


def from_document(document: Mapping[str, Any]) -> DeployedSlurm | None:
    """From a saved `plan --json` (its `slurm` section); None when it has none (a plan saved
    by a slurmstack before slurm.version)."""
    slurm = document.get("slurm")
    if not isinstance(slurm, Mapping) or not isinstance(slurm.get("version"), str):
        return None
    pools = {
        str(step["where"]).removeprefix("pool "): str(step["version"])
        for step in slurm.get("order", [])
        if str(step.get("where", "")).startswith("pool ")
    }
    return DeployedSlurm(slurm["version"], pools)


def release_findings(old: DeployedSlurm, new: ClusterSpec) -> list[Finding]:
    """What changing ``old``'s releases to ``new``'s is refused for, and, per pool moving to a
    newer release, the settings of the new slurm.conf that its nodes' old release would meet
    before their refresh: what the file sets that it would not set for that release."""
    findings = slurm_upgrade_findings(old.head, new.slurm.version)
    if any(f.level is Level.ERROR for f in findings):
        return findings
    moving = {
        pool.name: old.pools[pool.name]
        for pool in new.pools
        if pool.name in old.pools and old.pools[pool.name] != pool_slurm_version(new, pool)
    }
    if not moving:
        return findings
    floor = new.model_copy(
        update={
            "pools": [
                p.model_copy(update={"slurm_version": moving.get(p.name, p.slurm_version)})
                for p in new.pools
            ]
        }
    )
    extra = too_new(_slurm_conf(new), _slurm_conf(floor))
    for index, pool in enumerate(new.pools):
        before = moving.get(pool.name)
        if before is None or not extra:
            continue
        findings.append(
            warning(
                f"pools[{index}].slurm_version",
                f"the new slurm.conf sets {', '.join(extra)}, which it leaves out for Slurm "
                f"{before}; pool {pool.name}'s nodes run {before} until the refresh replaces "
                "them, and a slurmd stops at a setting its release does not know (at the "
                "reconfigure this change sends): set slurm.upgrade_from to "
                f"{before} for this change, so slurm.conf stays written for it, and remove it "
                "once every pool's refresh is done (docs/slurm-versions.md)",
            )
        )
    return findings


def _slurm_conf(spec: ClusterSpec) -> str:
    return head_files(build_plan(spec))[SLURM_CONF_PATH]


def too_new(conf: str, floor: str) -> list[str]:
    """The settings ``conf`` has that ``floor`` (the same cluster written for an older release)
    has not: whole lines by their first key (``HealthCheckTimeout``), and options within a
    line of the same first setting (``PartitionName=gpu``'s ``Exclusive=NODE``)."""
    older = _settings(floor)
    out: list[str] = []
    for name, options in _settings(conf).items():
        if name not in older:
            out.append(name.split("=", 1)[0])
            continue
        out += [o for o in options if o not in older[name] and o not in out]
    return out


def _settings(conf: str) -> dict[str, list[str]]:
    """Each setting line by its first key (its first ``key=value`` for a line that names a
    node, partition or node set), with its ``key=value`` options."""
    out: dict[str, list[str]] = {}
    for line in conf.splitlines():
        words = line.split("#", 1)[0].split()
        if not words or "=" not in words[0]:
            continue
        key = words[0].split("=", 1)[0]
        name = words[0] if key in _NAMED else key
        out[name] = words if key in _NAMED else [words[0].split("=", 1)[0]]
    return out


# Lines that name a thing (several of a kind): compared option by option.
_NAMED = frozenset({"NodeName", "PartitionName", "NodeSet", "DownNodes", "FrontendName"})
