"""NodeImages: the cluster's node images, baked by EC2 Image Builder inside this stack.

Per image of slurmstack.plan.image_plans (its inputs: slurmstack.render.image): the build bundle in the cluster bucket
(``images/<sha256>``: build script and settings; the node agent under one key), an AWSTOE
component that runs the script, a recipe on the parent image's public SSM parameter, and the
Image, whose AMI the head node and the pools boot. One infrastructure configuration (build
instance type, the compute subnet, an egress-only security group, an instance profile with
the build role) serves every image of an architecture.

Pinned: the recipe names the parent by its SSM parameter (``ssm:/aws/service/...``), which
Image Builder resolves when it builds; the Image resource is built once and its AMI is kept in
the stack's state, so later `pulumi up`s reuse it whatever the parameter says by then. A new
parent, or new pins (image_pins.json), make a new recipe (its name carries the hash of what it
builds, and the definition's image.version), hence a new Image, a new AMI, new launch template
versions and an instance refresh of each pool that boots it (slurmstack.stack.worker_pool).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws.cloudwatch as cloudwatch
import pulumi_aws.ec2 as ec2
import pulumi_aws.iam as iam
import pulumi_aws.imagebuilder as imagebuilder
import pulumi_aws.s3 as s3
import pulumi_aws.ssm as ssm
import pulumi_aws.vpc as vpc
from pulumi_aws import get_caller_identity_output

from slurmstack.catalog import Architecture
from slurmstack.contract import IMAGE_PREFIX, IMAGE_TAG, resource_name
from slurmstack.plan import ClusterPlan, ImagePlan, image_of, image_plans, own_ami
from slurmstack.render import image as build
from slurmstack.stack import policies
from slurmstack.stack.common import EVERYWHERE_V4, ROOT_DEVICE, Role, tags

IMAGE_ROLE = Role.IMAGE
IMAGE_TESTS_TIMEOUT_MINUTES = 60
# What Image Builder does besides the component's steps: launch and boot the build instance,
# take the AMI's snapshot (5 to 15 min for 30 to 512 GiB), launch and boot the test instance.
BUILD_INSTANCE_MINUTES = 10
SNAPSHOT_MINUTES = 30
# Image Builder keeps the build logs in CloudWatch Logs (EC2 Image Builder User Guide, "Monitor
# Image Builder logs with Amazon CloudWatch Logs": /aws/imagebuilder/<image name>); the
# stack makes each image's group, so it has a retention and goes with the stack.
BUILD_LOG_RETENTION_DAYS = 30


def image_build_timeout_minutes() -> int:
    """How long `pulumi up` waits for one image: every step at its own timeout (the build
    phase's, the validate phase's test, the test stage's), the snapshot and two instance boots.
    Less, and Pulumi gives up on an Image that Image Builder is still building (the provider's
    default is 60 min: Terraform AWS provider, aws_imagebuilder_image, "Timeouts")."""
    steps = (build.BUILD_TIMEOUT_SECONDS + build.TEST_TIMEOUT_SECONDS) // 60
    return steps + IMAGE_TESTS_TIMEOUT_MINUTES + SNAPSHOT_MINUTES + 2 * BUILD_INSTANCE_MINUTES


def build_log_group(plan: ClusterPlan, image: ImagePlan) -> str:
    return f"{policies.IMAGE_LOG_GROUP_PREFIX}{image_name(plan, image)}"


def image_name(plan: ClusterPlan, image: ImagePlan) -> str:
    return resource_name(plan.name, IMAGE_ROLE, image.key)


def content_tag(plan: ClusterPlan, image: ImagePlan, bundle: build.BuildBundle) -> str:
    """12 hex digits naming what a recipe builds: the parent, the generation and the build
    inputs (script and settings; the agent's key is fixed, see BuildBundle.key)."""
    parts = [image.parent, str(image.version), *(k for _n, k in bundle.keys)]
    parts.append(str(image.volume_gib))
    return build.sha256("\n".join(parts).encode())[:12]


class NodeImages(pulumi.ComponentResource):
    """Every baked image of the cluster; ``ami(role)`` is what a role boots."""

    role: iam.Role | None
    security_group: ec2.SecurityGroup | None
    built: dict[str, imagebuilder.Image]
    parents: dict[str, pulumi.Input[str]]  # what each image is built on, as the recipe says

    def __init__(
        self,
        plan: ClusterPlan,
        *,
        vpc_id: pulumi.Input[str],
        subnet_id: pulumi.Input[str],
        bucket: pulumi.Input[str],
        bucket_arn: pulumi.Input[str],
        network_ready: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``network_ready``: the routes the build instance needs (it downloads packages)."""
        name = resource_name(plan.name, IMAGE_ROLE)
        super().__init__("slurmstack:stack:NodeImages", name, None, opts)
        self._plan = plan
        self._child = pulumi.ResourceOptions(parent=self)
        self.built = {}
        self.parents = {}
        self.role = None
        self.security_group = None
        wanted = image_plans(plan)
        if not wanted:  # every node brings its own AMI
            self.register_outputs({})
            return
        account = get_caller_identity_output(
            opts=pulumi.InvokeOutputOptions(parent=self)
        ).account_id
        profile = self._build_identity(account, bucket_arn)
        # The agent the images carry: one object, whatever the number of images.
        agent = build.agent_archive()
        self._agent_object = s3.BucketObjectv2(
            f"{name}-agent",
            bucket=bucket,
            key=f"{IMAGE_PREFIX}{build.AGENT_ARCHIVE}",
            content_base64=_b64(agent),
            server_side_encryption="AES256",
            tags=tags(plan, Role.IMAGE, f"{name}-agent"),
            opts=self._child,
        )
        self.security_group, egress = self._egress_only_group(vpc_id)
        # The build instance downloads from its first step: the rule must exist before any
        # Image starts (the infrastructure configuration names the group, not the rule).
        network_ready = [*network_ready, egress]
        infrastructure: dict[Architecture, imagebuilder.InfrastructureConfiguration] = {}
        for image in wanted:
            if image.architecture not in infrastructure:
                infrastructure[image.architecture] = self._infrastructure(image, profile, subnet_id)
            self.built[image.key] = self._image(
                image, bucket, infrastructure[image.architecture], network_ready
            )
        self.register_outputs({key: self.ami_of(key) for key in self.built})

    # --- what other components read ---------------------------------------------------

    def ami_of(self, key: str) -> pulumi.Output[str]:
        """The AMI an image's build made (kept in state: later `pulumi up`s reuse it)."""
        return _built_ami(self.built[key])

    def ami(self, role: str) -> pulumi.Input[str]:
        """The AMI ``role`` ("head" or a pool) boots: its own, or the baked image's."""
        own = own_ami(self._plan, role)
        if own is not None:
            return own
        image = image_of(self._plan, role)
        assert image is not None  # a role without an AMI of its own has a baked image
        return self.ami_of(image.key)

    # --- resources ------------------------------------------------------------------------

    def _build_identity(
        self, account: pulumi.Input[str], bucket_arn: pulumi.Input[str]
    ) -> iam.InstanceProfile:
        plan = self._plan
        name = resource_name(plan.name, IMAGE_ROLE, "build")
        role_tags = tags(plan, Role.IDENTITY, name)
        self.role = iam.Role(
            name,
            name=name,
            assume_role_policy=json.dumps(policies.EC2_TRUST_POLICY),
            description=f"slurmstack {plan.name}: Image Builder build and test instances",
            tags=role_tags,
            opts=self._child,
        )
        iam.RolePolicy(
            name,
            name=name,
            role=self.role.id,
            policy=pulumi.Output.all(account, bucket_arn).apply(
                lambda args: json.dumps(
                    policies.image_build_policy(plan, account=args[0], bucket_arn=args[1]),
                    sort_keys=True,
                )
            ),
            opts=self._child,
        )
        return iam.InstanceProfile(
            name, name=name, role=self.role.name, tags=role_tags, opts=self._child
        )

    def _egress_only_group(
        self, vpc_id: pulumi.Input[str]
    ) -> tuple[ec2.SecurityGroup, vpc.SecurityGroupEgressRule]:
        """The build instances reach package repositories and GitHub through the NAT gateway;
        nothing reaches them (Image Builder talks to them through the SSM agent)."""
        plan = self._plan
        name = resource_name(plan.name, IMAGE_ROLE, "build")
        group = ec2.SecurityGroup(
            name,
            vpc_id=vpc_id,
            description=f"slurmstack {plan.name}: image builds (egress only)",
            tags=tags(plan, Role.SECURITY, name),
            opts=self._child,
        )
        egress = vpc.SecurityGroupEgressRule(
            f"{name}-egress-all",
            security_group_id=group.id,
            ip_protocol="-1",
            cidr_ipv4=EVERYWHERE_V4,
            description="all outbound: package repositories, GitHub, S3, SSM",
            tags=tags(plan, Role.SECURITY, f"{name}-egress-all"),
            opts=self._child,
        )
        return group, egress

    def _infrastructure(
        self,
        image: ImagePlan,
        profile: iam.InstanceProfile,
        subnet_id: pulumi.Input[str],
    ) -> imagebuilder.InfrastructureConfiguration:
        plan = self._plan
        assert self.security_group is not None
        name = resource_name(plan.name, IMAGE_ROLE, image.architecture.value.replace("_", "-"))
        return imagebuilder.InfrastructureConfiguration(
            name,
            name=name,
            description=f"slurmstack {plan.name}: where {image.architecture.value} images build",
            instance_types=[image.build_instance_type],
            instance_profile_name=profile.name,
            subnet_id=subnet_id,
            security_group_ids=[self.security_group.id],
            # A failed build's instance goes away (its logs stay in CloudWatch Logs, see
            # build_log_group), unless the definition keeps it to look into
            # (image.keep_build_instance).
            terminate_instance_on_failure=not plan.spec.image.keep_build_instance,
            instance_metadata_options={"http_tokens": "required", "http_put_response_hop_limit": 1},
            resource_tags=tags(plan, Role.IMAGE, name),
            tags=tags(plan, Role.IMAGE, name),
            opts=self._child,
        )

    def _image(
        self,
        image: ImagePlan,
        bucket: pulumi.Input[str],
        infrastructure: imagebuilder.InfrastructureConfiguration,
        network_ready: Sequence[pulumi.Resource],
    ) -> imagebuilder.Image:
        plan = self._plan
        base = image_name(plan, image)
        bundle = build.build_bundle(image)
        objects: list[pulumi.Resource] = [self._agent_object]
        objects += [
            s3.BucketObjectv2(
                f"{base}-{file.replace('.', '-')}",
                bucket=bucket,
                key=key,
                content_base64=_b64(bundle.files[file]),
                server_side_encryption="AES256",
                tags=tags(plan, Role.IMAGE, f"{base}-{file}"),
                opts=self._child,
            )
            for file, key in bundle.keys
            if file != build.AGENT_ARCHIVE
        ]
        # The name carries what it builds: a change makes a new component, recipe and image
        # (Image Builder's components and recipes cannot change in place).
        versioned = f"{base}-{content_tag(plan, image, bundle)}"
        component = imagebuilder.Component(
            versioned,
            name=versioned,
            version="1.0.0",
            platform="Linux",
            supported_os_versions=["Ubuntu 24"],
            description=f"slurmstack {plan.name}: bake the {image.kind.value} node image",
            data=pulumi.Output.from_input(bucket).apply(
                lambda name: build.component_document(plan, image, bundle, name, versioned)
            ),
            tags=tags(plan, Role.IMAGE, versioned),
            opts=pulumi.ResourceOptions(parent=self, depends_on=objects),
        )
        self.parents[image.key] = _parent_of(image, self)
        recipe = imagebuilder.ImageRecipe(
            versioned,
            name=versioned,
            version="1.0.0",
            # A pinned AMI or parameter version (image.parents), or the public parameter,
            # resolved by Image Builder at build time; the built AMI is what stays.
            parent_image=self.parents[image.key],
            components=[{"component_arn": component.arn}],
            block_device_mappings=[
                {
                    "device_name": ROOT_DEVICE,
                    "ebs": {
                        "volume_size": image.volume_gib,
                        "volume_type": "gp3",
                        "encrypted": "true",
                        "delete_on_termination": "true",
                    },
                }
            ],
            working_directory="/var/tmp",
            tags=tags(plan, Role.IMAGE, versioned),
            opts=self._child,
        )
        log_group = cloudwatch.LogGroup(
            base,
            name=build_log_group(plan, image),
            retention_in_days=BUILD_LOG_RETENTION_DAYS,
            tags=tags(plan, Role.IMAGE, base),
            opts=self._child,
        )
        # The AMI carries the cluster's tags and the image's key (Image Builder tags the AMI
        # with these, not with the Image's own tags), so the cluster's old AMIs can be found
        # and pruned by tag (docs/images.md).
        distribution = imagebuilder.DistributionConfiguration(
            base,
            name=base,
            description=f"slurmstack {plan.name}: the {image.key} AMI, tagged as the cluster's",
            distributions=[
                {
                    "region": plan.region,
                    "ami_distribution_configuration": {
                        "name": f"{base}-{{{{ imagebuilder:buildDate }}}}",
                        "ami_tags": snapshot_tags(plan, image),
                    },
                }
            ],
            tags=tags(plan, Role.IMAGE, base),
            opts=self._child,
        )
        built = imagebuilder.Image(
            base,
            image_recipe_arn=recipe.arn,
            infrastructure_configuration_arn=infrastructure.arn,
            distribution_configuration_arn=distribution.arn,
            logging_configuration={"log_group_name": log_group.name},
            image_tests_configuration={
                "image_tests_enabled": True,
                "timeout_minutes": IMAGE_TESTS_TIMEOUT_MINUTES,
            },
            enhanced_image_metadata_enabled=True,
            tags=tags(plan, Role.IMAGE, base, **{IMAGE_TAG: image.key}),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=list(network_ready),
                custom_timeouts=pulumi.CustomTimeouts(create=f"{image_build_timeout_minutes()}m"),
            ),
        )
        self._tag_snapshot(image, built)
        return built

    def _tag_snapshot(self, image: ImagePlan, built: imagebuilder.Image) -> None:
        """The AMI's root snapshot carries the AMI's tags. Image Builder tags the AMI only
        (its distribution settings have no snapshot tags), so the stack tags the snapshot once
        the image exists: the cluster's snapshots are found, costed and pruned by tag (the
        head's prune-images may delete only snapshots tagged as the cluster's)."""
        plan = self._plan
        base = image_name(plan, image)
        found = ec2.get_ami_output(
            owners=["self"],
            filters=_built_ami(built).apply(lambda ami: [{"name": "image-id", "values": [ami]}]),
            opts=pulumi.InvokeOutputOptions(parent=self, depends_on=[built]),
        )
        snapshot = found.block_device_mappings.apply(_root_snapshot)
        for key, value in sorted(snapshot_tags(plan, image).items()):
            ec2.Tag(
                f"{base}-snapshot-{_slug(key)}",
                resource_id=snapshot,
                key=key,
                value=value,
                opts=self._child,
            )


def _built_ami(built: imagebuilder.Image) -> pulumi.Output[str]:
    return built.output_resources.apply(
        lambda resources: str(resources[0].amis[0].image)  # type: ignore[index]
    )


def snapshot_tags(plan: ClusterPlan, image: ImagePlan) -> dict[str, str]:
    """What the AMI and its root snapshot carry: the cluster's tags and the image's key."""
    base = image_name(plan, image)
    return tags(plan, Role.IMAGE, base, **{IMAGE_TAG: image.key})


def _root_snapshot(mappings: Sequence[Any]) -> str:
    """The snapshot of the AMI's root volume (the recipe's one EBS mapping)."""
    for mapping in mappings:
        snapshot = (mapping.ebs or {}).get("snapshot_id")
        if mapping.device_name == ROOT_DEVICE and snapshot:
            return str(snapshot)
    raise ValueError(f"the image's AMI has no snapshot at {ROOT_DEVICE}")


def _slug(key: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in key).strip("-").lower()


def _parent_of(image: ImagePlan, parent: pulumi.Resource) -> pulumi.Input[str]:
    """The recipe's parent_image. A pinned parameter version is read here, at deploy time
    (GetParameter ``<parameter>:<version>``: the Systems Manager User Guide documents the
    selector for API calls, not Image Builder's ``ssm:`` parents), so the recipe names the AMI
    itself; a version Parameter Store no longer keeps fails the deploy before any image starts."""
    if image.parent_version is None:
        return image.parent
    found = ssm.get_parameter_output(
        name=image.parent_selector, opts=pulumi.InvokeOutputOptions(parent=parent)
    )
    return found.value


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()
