"""`slurmstack ssh-config`: a ready ~/.ssh/config block from a stack's outputs
(``pulumi stack output --json``). Pure: no AWS call here; the block's ProxyCommand makes them
when ssh connects.

Each login pool gets a Host entry that reaches one of the pool's in-service instances through
Session Manager (the AWS-StartSSHSession document forwards the SSH connection; no inbound
port, which is what VS Code Remote, scp and rsync need), with the user's own key and the
pool's host key alias: every node of a pool offers the pool's one host key, so a replaced
node is the host the user's known_hosts already trusts. A pool with a load balancer also gets
a direct entry (from the pool's ssh_cidrs).
"""

from __future__ import annotations

import shlex
from typing import Any


class OutputsError(ValueError):
    """The outputs are not a slurmstack stack's with login pools."""


def _instance_query(region: str, group: str) -> str:
    """The command that names one in-service instance of ``group`` at connect time."""
    query = "AutoScalingGroups[0].Instances[?LifecycleState==`InService`].InstanceId|[0]"
    return (
        f"aws autoscaling describe-auto-scaling-groups --region {region} "
        f"--auto-scaling-group-names {group} --query {shlex.quote(query)} --output text"
    )


def ssh_config(outputs: dict[str, Any], user: str, identity_file: str) -> str:
    """The ~/.ssh/config block for ``user`` (a login name of the definition)."""
    try:
        cluster, region = str(outputs["cluster"]), str(outputs["region"])
    except KeyError as exc:
        raise OutputsError(
            f"the outputs have no {exc.args[0]!r}: pass `pulumi stack output --json`"
        ) from None
    pools = outputs.get("login_pools") or {}
    if not pools:
        raise OutputsError(
            f"cluster {cluster} has no login pools: add login_pools to the definition and "
            "`pulumi up`"
        )
    users = outputs.get("users")
    if users is not None and user not in users:
        raise OutputsError(
            f"{user!r} is not a user of cluster {cluster} (users: {', '.join(users) or 'none'})"
        )
    lines = [f"# slurmstack cluster {cluster} ({region}): written by `slurmstack ssh-config`"]
    for name, pool in sorted(pools.items()):
        alias = str(pool.get("host_key_alias") or f"{cluster}-{name}")
        find = _instance_query(region, str(pool["asg_name"]))
        # ssh runs ProxyCommand with the user's shell, after expanding %p (the port).
        proxy = (
            f"aws ssm start-session --region {region} --target $({find}) "
            "--document-name AWS-StartSSHSession --parameters portNumber=%p"
        )
        lines += [
            "",
            f"# Login pool {name}: one of its nodes, through Session Manager (AWS CLI v2 and its",
            "# session-manager-plugin on this machine; IAM: ssm:StartSession on the instance).",
            f"Host {alias}",
            "    HostName login-pool-node",
            f"    User {user}",
            f"    IdentityFile {identity_file}",
            "    IdentitiesOnly yes",
            f"    HostKeyAlias {alias}",
            f"    ProxyCommand {proxy}",
            "    ServerAliveInterval 60",
        ]
        dns = pool.get("load_balancer_dns")
        if dns:
            lines += [
                "",
                f"# Login pool {name} directly, through its load balancer (from its ssh_cidrs).",
                f"Host {alias}-direct",
                f"    HostName {dns}",
                f"    User {user}",
                f"    IdentityFile {identity_file}",
                "    IdentitiesOnly yes",
                f"    HostKeyAlias {alias}",
            ]
    return "\n".join(lines) + "\n"
