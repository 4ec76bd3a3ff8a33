"""One login pool: a launch template, an Auto Scaling group at the pool's count, the secret
that holds the pool's SSH host key and, when asked, a Network Load Balancer in front of port
22. Login nodes are replaced like workers (the group's health check, their boot check) and
roll with new images (instance refresh); they are not Slurm nodes, so no drain hook."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_aws.autoscaling as autoscaling
import pulumi_aws.ec2 as ec2
import pulumi_aws.lb as lb
import pulumi_aws.secretsmanager as secretsmanager

from slurmstack.contract import (
    LOGIN_POOL_TAG,
    login_host_key_secret_name,
    resource_name,
)
from slurmstack.plan import ClusterPlan, LoginPoolPlan
from slurmstack.stack.common import ROOT_DEVICE, SLURM_VERSION_TAG, Role, tags
from slurmstack.stack.user_data import encoded_user_data
from slurmstack.stack.worker_pool import HEALTH_CHECK_GRACE_SECONDS, instance_refresh

SSH_PORT = 22


class LoginPool(pulumi.ComponentResource):
    launch_template: ec2.LaunchTemplate
    group: autoscaling.Group
    host_key: secretsmanager.Secret
    load_balancer: lb.LoadBalancer | None

    def __init__(
        self,
        plan: ClusterPlan,
        pool: LoginPoolPlan,
        *,
        subnet_id: pulumi.Input[str],
        public_subnet_id: pulumi.Input[str] | None,
        vpc_id: pulumi.Input[str],
        security_group_id: pulumi.Input[str],
        instance_profile_arn: pulumi.Input[str],
        image_id: pulumi.Input[str],
        network_ready: Sequence[pulumi.Resource] = (),
        security_ready: Sequence[pulumi.Resource] = (),
        controller: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        name = resource_name(plan.name, Role.LOGIN, pool.name)
        super().__init__("slurmstack:stack:LoginPool", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        pool_tags = tags(
            plan,
            Role.LOGIN,
            name,
            **{LOGIN_POOL_TAG: pool.name, SLURM_VERSION_TAG: plan.spec.slurm.version},
        )

        # No value: the pool's first node makes the key and stores it (node.people.access).
        # Kept with the stack's other secrets; deleting the pool deletes it after AWS's wait.
        self.host_key = secretsmanager.Secret(
            name,
            name=login_host_key_secret_name(plan.name, pool.name),
            description=f"slurmstack {plan.name}: SSH host key of login pool {pool.name}",
            # Deleted at once with the pool: a pool made again under this name makes a new key.
            recovery_window_in_days=0,
            tags=pool_tags,
            opts=child,
        )
        self.launch_template = ec2.LaunchTemplate(
            name,
            name=name,
            description=f"slurmstack {plan.name}: login pool {pool.name} ({pool.instance_type})",
            image_id=image_id,
            instance_type=pool.instance_type,
            iam_instance_profile=ec2.LaunchTemplateIamInstanceProfileArgs(arn=instance_profile_arn),
            # Your client groups too, so that file systems of yours admit the login nodes.
            vpc_security_group_ids=[security_group_id, *plan.existing_client_groups],
            metadata_options=ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1
            ),
            block_device_mappings=[
                ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=ROOT_DEVICE,
                    ebs=ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_type="gp3",
                        volume_size=pool.root_volume.size_gib,
                        iops=pool.root_volume.iops,
                        throughput=pool.root_volume.throughput_mibps,
                        encrypted="true",
                        delete_on_termination="true",
                    ),
                )
            ],
            user_data=encoded_user_data(plan, pool.role),
            tag_specifications=[
                {"resource_type": kind, "tags": pool_tags}
                for kind in ("volume", "network-interface")
            ],
            update_default_version=True,
            tags=pool_tags,
            # Slurm's upgrade order puts clients last: a new release's sackd and commands wait
            # for the head's (``controller``), as the pools' slurmd do.
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(controller)),
        )
        self.load_balancer = None
        target_groups: list[pulumi.Input[str]] = []
        if pool.load_balancer and public_subnet_id is not None:
            target = lb.TargetGroup(
                name,
                name=resource_name(plan.name, "ssh", pool.name)[:32],
                port=SSH_PORT,
                protocol="TCP",
                vpc_id=vpc_id,
                target_type="instance",
                # sshd answers on 22: a node that does not is taken out of the rotation.
                health_check=lb.TargetGroupHealthCheckArgs(protocol="TCP", port=str(SSH_PORT)),
                tags=pool_tags,
                opts=child,
            )
            self.load_balancer = lb.LoadBalancer(
                name,
                name=resource_name(plan.name, "ssh", pool.name)[:32],
                load_balancer_type="network",
                internal=False,
                subnets=[public_subnet_id],
                security_groups=[security_group_id],
                tags=pool_tags,
                opts=child,
            )
            lb.Listener(
                name,
                load_balancer_arn=self.load_balancer.arn,
                port=SSH_PORT,
                protocol="TCP",
                default_actions=[
                    lb.ListenerDefaultActionArgs(type="forward", target_group_arn=target.arn)
                ],
                tags=pool_tags,
                opts=child,
            )
            target_groups.append(target.arn)
        version = self.launch_template.latest_version.apply(str)
        self.group = autoscaling.Group(
            name,
            name=name,
            min_size=pool.count,
            max_size=pool.count,
            desired_capacity=pool.count,
            vpc_zone_identifiers=[subnet_id],
            launch_template={"id": self.launch_template.id, "version": version},
            target_group_arns=target_groups or None,
            # Behind a balancer, a node whose sshd stops answering is replaced too.
            health_check_type="ELB" if target_groups else "EC2",
            health_check_grace_period=HEALTH_CHECK_GRACE_SECONDS,
            wait_for_capacity_timeout="0",
            instance_refresh=instance_refresh(plan),
            tags=[
                {"key": key, "value": value, "propagate_at_launch": True}
                for key, value in sorted(pool_tags.items())
            ],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*network_ready, *security_ready]),
        )
        self.register_outputs({"asg_name": self.group.name, "count": pool.count})
