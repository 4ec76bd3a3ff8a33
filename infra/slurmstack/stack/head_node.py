"""The Slurm head node: slurmctld, the login shell, and a separate persistent volume for
Slurm state that outlives the instance.

Nothing here depends on a pool or a storage resource: the bootstrap reads the deploy-time
values (bucket, Lustre, EFS, config manifest) from SSM parameters, so adding, resizing or
removing a pool, or waiting for Lustre, never touches this instance.
"""

from __future__ import annotations

import base64

import pulumi
import pulumi_aws.ebs as ebs
import pulumi_aws.ec2 as ec2
import pulumi_aws.ssm as ssm

from slurmstack import render
from slurmstack.plan import ClusterPlan, DeployParameter
from slurmstack.stack import parameters
from slurmstack.stack.bucket import stateful_options
from slurmstack.stack.common import STATE_VOLUME_DEVICE, Role, resource_name, tags

HEAD_ROLE = "head"
STATE_VOLUME_IOPS = 3000
STATE_VOLUME_THROUGHPUT = 125


def encoded_user_data(plan: ClusterPlan, role: str) -> str:
    """Base64 of the rendered cloud-init document (what EC2 expects in launch templates)."""
    return base64.b64encode(render.user_data(plan, role).encode()).decode()


def head_in_public_subnet(plan: ClusterPlan, public_subnet_id: object | None) -> bool:
    """SSH from ssh_cidrs needs a reachable address: the head node then sits in the public
    subnet with a public IP. Otherwise it is private and reached through Session Manager."""
    return bool(plan.spec.network.ssh_cidrs) and public_subnet_id is not None


class HeadNode(pulumi.ComponentResource):
    instance: ec2.Instance
    state_volume: ebs.Volume

    def __init__(
        self,
        plan: ClusterPlan,
        *,
        compute_subnet_id: pulumi.Input[str],
        public_subnet_id: pulumi.Input[str] | None,
        security_group_id: pulumi.Input[str],
        instance_profile: pulumi.Input[str],
        network_ready: tuple[pulumi.Resource, ...] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        name = resource_name(plan.name, Role.HEAD)
        super().__init__("slurmstack:stack:HeadNode", name, None, opts)
        head = plan.head
        public = head_in_public_subnet(plan, public_subnet_id)
        subnet_id = (
            public_subnet_id if public and public_subnet_id is not None else compute_subnet_id
        )

        if head.ami is not None:
            ami: pulumi.Input[str] = head.ami
            ignore: list[str] = []
        else:
            # Resolved at deploy time and then ignored: a new Ubuntu image must not replace a
            # running head node (`pulumi up --replace` picks up a new one deliberately).
            # EC2's own `resolve:ssm:` syntax is no option for an instance: the provider reads
            # back the resolved ami-... id and plans a replacement on every update.
            ami = ssm.get_parameter_output(
                name=head.ami_ssm_parameter, opts=pulumi.InvokeOutputOptions(parent=self)
            ).value
            ignore = ["ami"]

        self.instance = ec2.Instance(
            name,
            ami=ami,
            instance_type=head.instance_type,
            subnet_id=subnet_id,
            associate_public_ip_address=public,
            vpc_security_group_ids=[security_group_id],
            iam_instance_profile=instance_profile,
            metadata_options={
                "http_endpoint": "enabled",
                "http_tokens": "required",
                # 1: the token must not travel past the host (no container reaches it); on the
                # host only root does (slurmstack.imds_firewall).
                "http_put_response_hop_limit": 1,
            },
            root_block_device={
                "volume_type": "gp3",
                "volume_size": head.root_volume.size_gib,
                "iops": head.root_volume.iops,
                "throughput": head.root_volume.throughput_mibps,
                "encrypted": True,
                "delete_on_termination": True,
                "tags": tags(plan, Role.HEAD, f"{name}-root"),
            },
            user_data_base64=encoded_user_data(plan, HEAD_ROLE),
            tags=tags(plan, Role.HEAD, name),
            opts=pulumi.ResourceOptions(
                parent=self, ignore_changes=ignore, depends_on=list(network_ready)
            ),
        )
        state_name = f"{name}-state"
        self.state_volume = ebs.Volume(
            state_name,
            availability_zone=plan.availability_zone,
            size=head.state_volume_gib,
            type="gp3",
            iops=STATE_VOLUME_IOPS,
            throughput=STATE_VOLUME_THROUGHPUT,
            encrypted=True,
            tags=tags(plan, Role.HEAD, state_name),
            opts=stateful_options(plan, self, retain=True),
        )
        ebs_attachment_opts = pulumi.ResourceOptions(
            parent=self,
            # The volume can be attached to one instance at a time: detach from the old head
            # node before attaching to its replacement.
            delete_before_replace=True,
        )
        ec2.VolumeAttachment(
            state_name,
            device_name=STATE_VOLUME_DEVICE,
            volume_id=self.state_volume.id,
            instance_id=self.instance.id,
            # Stop slurmctld's instance before detaching so the file system is clean.
            stop_instance_before_detaching=True,
            opts=ebs_attachment_opts,
        )
        parameters.publish(
            plan,
            DeployParameter.HEAD_ADDRESS,
            self.instance.private_ip,
            role=Role.HEAD,
            parent=self,
        )
        # The bootstrap finds the state volume by id (the NVMe serial is the id without its
        # dash), falling back to the device name the EBS controller reports.
        parameters.publish(
            plan, DeployParameter.STATE_VOLUME_ID, self.state_volume.id, role=Role.HEAD, parent=self
        )
        self.register_outputs({"id": self.instance.id, "private_ip": self.instance.private_ip})
