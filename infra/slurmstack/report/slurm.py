"""What `slurmstack plan` says about Slurm: the version the images build (its pinned source),
how long SchedMD supports its release line, which releases a cluster can upgrade from directly,
and what a change of slurm.version does to a running cluster (Slurm's upgrade order, what is
paused). ``upgrade_section`` is the same for one given older version (`plan --against`)."""

from __future__ import annotations

from typing import Any

from slurmstack.plan import ClusterPlan
from slurmstack.plan.accounting import accounting_plan
from slurmstack.plan.slurm import pool_slurm_version
from slurmstack.slurm_releases import (
    as_of,
    line_of,
    lines,
    source,
    supported,
    upgrade_hops,
    upgrade_steps,
    version_of_record,
)


def slurm_section(plan: ClusterPlan) -> dict[str, Any]:
    version = plan.spec.slurm.version
    line = line_of(version)
    pinned = source(version)
    row = lines().get(line)
    older = [other for other in lines() if other < line]
    return {
        "version": version,
        "release_line": line,
        "version_of_record": version_of_record(),
        "source": None
        if pinned is None
        else {
            "tag": pinned.tag,
            "url": pinned.url,
            "sha256": pinned.sha256,
            "provenance": pinned.provenance,
        },
        "supported": supported(line),
        "end_of_support": None if row is None else row.end_of_support,
        "support_as_of": as_of(),
        # From these release lines an upgrade to this version is one step; from older ones,
        # through the releases listed.
        "upgrades_directly_from": [] if row is None else list(row.compatible_prior),
        "upgrades_through": {
            other: list(hops[:-1])
            for other in older
            if (hops := upgrade_hops(f"{other}.0", version)) is not None and len(hops) > 1
        },
        "upgrade_steps": _steps(plan),
        "order": order(plan),
    }


def order(plan: ClusterPlan) -> list[dict[str, Any]]:
    """Which daemon runs which release, in the order a rollout takes them: the head's first
    (slurmdbd, then slurmctld), then every pool's slurmd, which never runs ahead of slurmctld
    (checks.slurm.slurm_version_order); a pool may lag the head in a staged upgrade."""
    head = plan.spec.slurm.version
    daemons = ["slurmdbd", "slurmctld"] if accounting_plan(plan) is not None else ["slurmctld"]
    out: list[dict[str, Any]] = [
        {"step": 1, "where": "head node", "daemons": daemons, "version": head, "lags_head": False}
    ]
    for spec in plan.spec.pools:
        version = pool_slurm_version(plan.spec, spec)
        out.append(
            {
                "step": 2,
                "where": f"pool {spec.name}",
                "daemons": ["slurmd"],
                "version": version,
                "lags_head": version != head,
            }
        )
    # Login nodes boot the head's release (plan.images) and are replaced after it.
    for login in plan.login_pools:
        out.append(
            {
                "step": 3,
                "where": f"login pool {login.name}",
                "daemons": ["sackd"],
                "version": head,
                "lags_head": False,
            }
        )
    return out


def _steps(plan: ClusterPlan) -> list[dict[str, str]]:
    accounting = accounting_plan(plan) is not None
    return [
        {"daemon": s.daemon, "where": s.where, "how": s.how, "paused": s.paused}
        for s in upgrade_steps(accounting, login_nodes=bool(plan.login_pools))
    ]


def upgrade_section(plan: ClusterPlan, old_version: str) -> dict[str, Any]:
    """A change from ``old_version`` to the plan's slurm.version: the release lines it runs
    through, the steps of each (Slurm's order), and whether it is refused."""
    new = plan.spec.slurm.version
    hops = upgrade_hops(old_version, new)
    if old_version == new:
        kind = "none"
    elif hops is None or len(hops) > 1:
        kind = "refused"
    else:
        kind = "patch" if not hops else "upgrade"
    return {
        "from": old_version,
        "to": new,
        "kind": kind,
        "through": [] if hops is None else list(hops[:-1]),
        "steps": [] if kind in ("none", "refused") else _steps(plan),
    }
