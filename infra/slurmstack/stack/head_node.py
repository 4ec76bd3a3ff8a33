"""The Slurm head node: slurmctld, the login shell, and two things that outlive the
instance: a separate persistent volume for Slurm state, and a network interface whose
private address is the head node's address for good.

Nothing here depends on a pool or a storage resource: the bootstrap reads the deploy-time
values (bucket, Lustre, EFS, config manifest) from SSM parameters, so adding, resizing or
removing a pool, or waiting for Lustre, never touches this instance.

The head's address survives its replacement. Its primary network interface is a resource
of its own, attached to the instance and kept when the instance goes, so a replaced head
comes back at the same private address: slurmds that are running, their configless cache,
`srun` on the head and the /etc/hosts entries on every node stay right, and nothing waits
for a DNS change. A private Route 53 record would have needed a hosted zone associated with
the VPC, DNS support and DNS hostnames turned on in a VPC slurmstack may not own, and
resolvers that honour its TTL wherever Slurm caches an address. Workers still re-read the
address (the HEAD_ADDRESS parameter) before every slurmd start, for the one case where the
interface itself is replaced (the head moving between subnets).

The user data is a first-boot document: cloud-init does not run it again, and the
configuration reaches the head through the config store. A change of it must not stop and
start the head (what the provider does to apply new user data), so it is ignored after
creation; the instance's USER_DATA_TAG shows, as an in-place tag change in the preview,
that the head runs an older bootstrap, and `pulumi up --replace <head_node_urn>` (a stack
output) builds a new head with the new one, at the same address with the same state volume.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws.ebs as ebs
import pulumi_aws.ec2 as ec2
import pulumi_aws.ssm as ssm

from slurmstack.contract import (
    HEAD_ROLE,
    STATE_VOLUME_DEVICE,
    TAG_PREFIX,
    DeployParameter,
    resource_name,
)
from slurmstack.plan import ClusterPlan
from slurmstack.stack import parameters
from slurmstack.stack.bucket import stateful_options
from slurmstack.stack.common import SLURM_VERSION_TAG, Role, tags
from slurmstack.stack.user_data import encoded_user_data, user_data_sha256

STATE_VOLUME_IOPS = 3000
STATE_VOLUME_THROUGHPUT = 125
# sha256 of the user data the running head was built with (see the module's docstring).
USER_DATA_TAG = f"{TAG_PREFIX}user-data-sha256"
# Provider property names the head ignores after creation (wire names, as Pulumi records them).
USER_DATA_PROPERTY = "userDataBase64"


def head_ami(
    plan: ClusterPlan, ami: pulumi.Input[str], *, parent: pulumi.Resource
) -> ssm.Parameter:
    """The AMI the head boots, held in an SSM parameter named for its Slurm release.

    A new image (new pins, a new parent) must not replace a running head: the parameter
    ignores later values, so the head's AMI input stays what it was. A new slurm.version must
    replace it, before any pool rolls (Slurm upgrades slurmdbd, then slurmctld, then slurmd):
    the parameter of the new release is a new resource, which takes the new image's AMI; the
    head's AMI changes, and the provider replaces the instance (ami is force-new). The pools'
    launch templates wait for the head (slurmstack.stack.cluster), so in one `pulumi up` the
    head runs the new slurmdbd and slurmctld before a pool's instance refresh starts.

    Why not ignore_changes on the instance's ami: the engine gives an ignored input its old
    value on a replacement too (pulumi/pulumi, step_generator.go: processIgnoreChanges before
    the diff), so even `pulumi up --replace` would bring back the old image.
    """
    version = plan.spec.slurm.version
    name = resource_name(plan.name, Role.HEAD, "ami-slurm-" + version.replace(".", "-"))
    key = f"{plan.parameter_prefix}/head/ami/slurm-{version}"
    return ssm.Parameter(
        name,
        name=key,
        type="String",
        # An AMI id is no secret (``value`` would make the instance's ami one).
        insecure_value=ami,
        description=f"slurmstack {plan.name}: the AMI the head boots for Slurm {version}",
        tags=tags(plan, Role.HEAD, name),
        opts=pulumi.ResourceOptions(parent=parent, ignore_changes=["insecureValue"]),
    )


def controller_instance_inputs(plan: ClusterPlan, name: str) -> dict[str, Any]:
    """What the head's instance and the backup controller's (slurmstack.stack.head_backup) have
    alike: type, recovery, metadata options, root volume, the head's document and its tags."""
    head = plan.head
    return {
        "instance_type": head.instance_type,
        # EC2's simplified automatic recovery (on by default where supported), explicit so
        # head_node.auto_recovery: false turns it off too (slurmstack.stack.head_recovery).
        "maintenance_options": {"auto_recovery": "default" if head.auto_recovery else "disabled"},
        "metadata_options": {
            "http_endpoint": "enabled",
            "http_tokens": "required",
            # 1: the token must not travel past the host (no container reaches it); on the
            # host only root does (slurmstack.imds_firewall).
            "http_put_response_hop_limit": 1,
        },
        "root_block_device": {
            "volume_type": "gp3",
            "volume_size": head.root_volume.size_gib,
            "iops": head.root_volume.iops,
            "throughput": head.root_volume.throughput_mibps,
            "encrypted": True,
            "delete_on_termination": True,
            "tags": tags(plan, Role.HEAD, f"{name}-root"),
        },
        "user_data_base64": encoded_user_data(plan, HEAD_ROLE),
        "tags": tags(
            plan,
            Role.HEAD,
            name,
            **{
                USER_DATA_TAG: user_data_sha256(plan, HEAD_ROLE),
                SLURM_VERSION_TAG: plan.spec.slurm.version,
            },
        ),
    }


def head_in_public_subnet(plan: ClusterPlan, public_subnet_id: object | None) -> bool:
    """SSH from ssh_cidrs needs a reachable address: the head node then sits in the public
    subnet with a public IP. Otherwise it is private and reached through Session Manager."""
    return bool(plan.spec.network.ssh_cidrs) and public_subnet_id is not None


class HeadNode(pulumi.ComponentResource):
    instance: ec2.Instance
    state_volume: ebs.Volume | None
    interface: ec2.NetworkInterface
    public_ip: ec2.Eip | None

    def __init__(
        self,
        plan: ClusterPlan,
        *,
        compute_subnet_id: pulumi.Input[str],
        public_subnet_id: pulumi.Input[str] | None,
        security_group_id: pulumi.Input[str],
        instance_profile: pulumi.Input[str],
        ami: pulumi.Input[str],
        network_ready: Sequence[pulumi.Resource] = (),
        public_network_ready: Sequence[pulumi.Resource] = (),
        security_ready: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``network_ready`` / ``public_network_ready``: the routes (and endpoint) the head
        needs at boot in the compute / the public subnet; ``security_ready``: the head group's
        rules. The instance waits for those of the subnet it is in."""
        name = resource_name(plan.name, Role.HEAD)
        super().__init__("slurmstack:stack:HeadNode", name, None, opts)
        head = plan.head
        public = head_in_public_subnet(plan, public_subnet_id)
        subnet_id = (
            public_subnet_id if public and public_subnet_id is not None else compute_subnet_id
        )
        route_ready = list(public_network_ready if public else network_ready)

        # The head's address for good: see the module's docstring.
        self.interface = ec2.NetworkInterface(
            name,
            subnet_id=subnet_id,
            # Your file systems' client groups too (storage.existing): they admit those.
            security_groups=[security_group_id, *plan.existing_client_groups],
            description=f"slurmstack {plan.name}: the head node's address (kept across replacement)",
            tags=tags(plan, Role.HEAD, name),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.public_ip = None
        if public:
            # SSH from ssh_cidrs: a public address on the same interface, which also outlives
            # the instance. An Elastic IP needs the internet gateway's route first.
            self.public_ip = ec2.Eip(
                f"{name}-public",
                domain="vpc",
                network_interface=self.interface.id,
                tags=tags(plan, Role.HEAD, f"{name}-public"),
                opts=pulumi.ResourceOptions(parent=self, depends_on=route_ready),
            )

        # What the head boots: the AMI first built (or named) for its Slurm release, kept in a
        # parameter of that release (see head_ami).
        self.ami_parameter = head_ami(plan, ami, parent=self)

        self.instance = ec2.Instance(
            name,
            ami=self.ami_parameter.insecure_value,
            # Subnet, security group and public address come with the interface.
            primary_network_interface={"network_interface_id": self.interface.id},
            iam_instance_profile=instance_profile,
            **controller_instance_inputs(plan, name),
            opts=pulumi.ResourceOptions(
                parent=self,
                ignore_changes=[USER_DATA_PROPERTY],
                depends_on=[*route_ready, *security_ready],
                # The interface (and the state volume) can belong to one instance at a time:
                # the old head goes before its replacement attaches them.
                delete_before_replace=True,
            ),
        )
        # With a backup controller, Slurm's state is on EFS (slurmstack.stack.head_backup).
        self.state_volume = None if head.backup else self._state_volume(plan, name)
        parameters.publish(
            plan,
            DeployParameter.HEAD_ADDRESS,
            self.interface.private_ip,
            role=Role.HEAD,
            parent=self,
        )
        self.register_outputs({"id": self.instance.id, "private_ip": self.interface.private_ip})

    def _state_volume(self, plan: ClusterPlan, name: str) -> ebs.Volume:
        state_name = f"{name}-state"
        volume = ebs.Volume(
            state_name,
            availability_zone=plan.availability_zone,
            size=plan.head.state_volume_gib,
            type="gp3",
            iops=STATE_VOLUME_IOPS,
            throughput=STATE_VOLUME_THROUGHPUT,
            encrypted=True,
            tags=tags(plan, Role.HEAD, state_name),
            opts=stateful_options(plan, self, retain=True),
        )
        ec2.VolumeAttachment(
            state_name,
            device_name=STATE_VOLUME_DEVICE,
            volume_id=volume.id,
            instance_id=self.instance.id,
            # Stop slurmctld's instance before detaching so the file system is clean.
            stop_instance_before_detaching=True,
            opts=pulumi.ResourceOptions(
                parent=self,
                # The volume can be attached to one instance at a time: detach from the old
                # head node before attaching to its replacement.
                delete_before_replace=True,
            ),
        )
        # The bootstrap finds the state volume by id (the NVMe serial is the id without its
        # dash), falling back to the device name the EBS controller reports.
        parameters.publish(
            plan, DeployParameter.STATE_VOLUME_ID, volume.id, role=Role.HEAD, parent=self
        )
        return volume
