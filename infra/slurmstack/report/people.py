"""plan's people section: how many people, the login pools and the way in."""

from __future__ import annotations

from typing import Any

from slurmstack.plan import ClusterPlan


def way_in(plan: ClusterPlan) -> str:
    """How a person reaches the cluster, in one line."""
    if not plan.login_pools:
        return "no login pool: operators only, through Session Manager on the head node"
    direct = [p.name for p in plan.login_pools if p.ssh_cidrs]
    text = (
        "SSH with their own key to a login node, through Session Manager (AWS-StartSSHSession; "
        "`slurmstack ssh-config` prints the ~/.ssh/config block)"
    )
    if direct:
        text += f"; direct SSH to {', '.join(direct)} from its ssh_cidrs"
    if any(u.iam_principal for u in plan.spec.users):
        text += "; Session Manager shells as themselves (Run As, SSMSessionRunAs tags)"
    return text


def people_section(plan: ClusterPlan) -> dict[str, Any]:
    spec = plan.spec
    directory = spec.directory
    return {
        "users": len(spec.users),
        "locked_users": sorted(u.name for u in spec.users if u.locked),
        "admins": sorted(u.name for u in spec.users if u.admin and not u.locked),
        "groups": len(spec.groups),
        "directory": None
        if directory is None
        else {"type": directory.type.value, "uris": list(directory.uris)},
        "login_pools": [
            {
                "name": p.name,
                "instance_type": p.instance_type,
                "count": p.count,
                "ssh_cidrs": list(p.ssh_cidrs),
                "load_balancer": p.load_balancer,
            }
            for p in plan.login_pools
        ],
        "way_in": way_in(plan),
        # Session Manager's Run As: tag each principal with its Linux user.
        "run_as_tags": [
            {"principal": u.iam_principal, "tag": f"SSMSessionRunAs={u.name}"}
            for u in spec.users
            if u.iam_principal
        ],
    }
