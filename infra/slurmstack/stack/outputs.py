"""Stack outputs of a SlurmCluster (exported by the entry point): what operators and
`slurmstack` commands read after `pulumi up`, nothing secret (the munge key is only in Secrets
Manager)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi

from slurmstack.contract import GRAFANA_PORT
from slurmstack.plan import accounting_plan

if TYPE_CHECKING:
    from slurmstack.stack.cluster import SlurmCluster


def export_outputs(cluster: SlurmCluster) -> None:
    for key, value in cluster.outputs().items():
        pulumi.export(key, value)


def stack_outputs(cluster: SlurmCluster) -> dict[str, pulumi.Input[object]]:
    """The stack outputs: nothing secret (the munge key is only in Secrets Manager)."""
    plan = cluster.plan
    instance = cluster.head.instance
    out: dict[str, pulumi.Input[object]] = {
        "cluster": plan.name,
        "region": plan.region,
        "head_node_id": instance.id,
        # `pulumi up --replace <head_node_urn>`: a new head with a new bootstrap (user data
        # changes are not applied to a running head node).
        "head_node_urn": instance.urn,
        "head_private_ip": cluster.head.interface.private_ip,
        "ssm_session_command": pulumi.Output.concat(
            "aws ssm start-session --region ", plan.region, " --target ", instance.id
        ),
        # The head's Grafana (loopback only) on this machine's localhost:3000.
        "grafana_port_forward_command": pulumi.Output.concat(
            "aws ssm start-session --region ",
            plan.region,
            " --target ",
            instance.id,
            " --document-name AWS-StartPortForwardingSession --parameters ",
            f"portNumber={GRAFANA_PORT},localPortNumber={GRAFANA_PORT}",
        ),
        "bucket_name": cluster.bucket.bucket.id,
        "munge_secret_name": plan.munge_secret_name,
        # Where the accounting database's password is (its name, never its value).
        "accounting_password_secret": (
            acct.database.password_secret if (acct := accounting_plan(plan)) else None
        ),
        "parameter_prefix": plan.parameter_prefix,
        "config_manifest_sha256": cluster.config.manifest_hash,
        "images": {key: cluster.images.ami_of(key) for key in cluster.images.built},
        # What each baked image is built on: a pinned AMI, the AMI a pinned parameter
        # version named when the stack read it, or ssm:<parameter> (Image Builder's choice,
        # recorded in the image's manifest, /etc/slurmstack/image.json).
        "image_parents": dict(cluster.images.parents),
        "pools": {
            name: {
                "asg_name": pool.group.name,
                "count": plan.pool(name).count,
                "max_count": plan.pool(name).max_count,
                "instance_type": plan.pool(name).instance_type,
            }
            for name, pool in cluster.pools.items()
        },
    }
    out["alert_topic_arn"] = cluster.monitoring.topic.arn
    if cluster.head_recovery is not None:
        # The head's recovery alarms by what they do (recover, reboot): docs/head-failure.md.
        out["head_recovery_alarms"] = {
            action: alarm.name for action, alarm in cluster.head_recovery.alarms.items()
        }
    if cluster.backup_recovery is not None:
        out["backup_recovery_alarms"] = {
            action: alarm.name for action, alarm in cluster.backup_recovery.alarms.items()
        }
    out["log_groups"] = {s.value: g.name for s, g in cluster.monitoring.log_groups.items()}
    if cluster.monitoring.prometheus is not None:
        out["prometheus_workspace_id"] = cluster.monitoring.prometheus.id
    if cluster.monitoring.grafana is not None:
        out["grafana_endpoint"] = cluster.monitoring.grafana.endpoint
    if cluster.login_pools:
        # What `slurmstack ssh-config` reads: each login pool's group (its instances are
        # found by it), the host key alias users' known_hosts keep, and the NLB's name.
        out["login_pools"] = {
            name: {
                "asg_name": login.group.name,
                "count": plan.login_pool(name).count,
                "instance_type": plan.login_pool(name).instance_type,
                "host_key_alias": f"{plan.name}-{name}",
                "load_balancer_dns": (
                    login.load_balancer.dns_name if login.load_balancer is not None else None
                ),
            }
            for name, login in cluster.login_pools.items()
        }
        out["users"] = [u.name for u in plan.spec.users]
    if cluster.head.public_ip is not None:
        out["head_public_ip"] = cluster.head.public_ip.public_ip
    if cluster.lustre is not None:
        out["lustre_dns_name"] = cluster.lustre.file_system.dns_name
        out["lustre_mount_name"] = cluster.lustre.file_system.mount_name
    if cluster.home is not None:
        out["efs_id"] = cluster.home.file_system.id
    if cluster.existing is not None:
        # What the lookups found: file system id -> DNS name (passed the reachability check).
        out["existing_file_systems"] = cluster.existing.dns_names
    return out
