"""Put what the Pulumi program registers into moto, as `pulumi up` would create it.

The program runs under the offline engine (``slurmstack.offline``); every resource the nodes
read at boot is created in moto from the inputs the program gave it: the compute network, the
bucket and the config store's objects and manifest, the munge secret, the SSM parameters and
the apply-config document, the head instance, the pools' launch templates and Auto Scaling
groups. Nothing here knows what the files say or how many there are; it copies what was
registered. Values that only exist once AWS has created a resource are the virtual cluster's
own: the head node's address is the one moto gave its instance, the bucket is made under the
name the program's stand-in output gave it.

One change on the way (standins.STORE_PATCHES): the head node's slurm.conf as this machine
runs it. The patched file is stored under its own hash and the manifest, stored the same way,
points at it, exactly as the config store does for any file.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

from slurmstack import contract
from slurmstack.offline import OfflineRun, RecordedResource

from .aws import MotoServer
from .standins import PLACEHOLDER_AMI, STORE_PATCHES

VPC = "aws:ec2/vpc:Vpc"
SUBNET = "aws:ec2/subnet:Subnet"
BUCKET = "aws:s3/bucket:Bucket"
OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"
SECRET = "aws:secretsmanager/secret:Secret"
SECRET_VERSION = "aws:secretsmanager/secretVersion:SecretVersion"
PARAMETER = "aws:ssm/parameter:Parameter"
DOCUMENT = "aws:ssm/document:Document"
ASSOCIATION = "aws:ssm/association:Association"
INSTANCE = "aws:ec2/instance:Instance"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
GROUP = "aws:autoscaling/group:Group"

HEAD_ADDRESS_SUFFIX = f"/{contract.DeployParameter.HEAD_ADDRESS}"
MANIFEST_SUFFIX = f"/{contract.DeployParameter.CONFIG_MANIFEST}"


@dataclass
class Deployment:
    """What the harness needs to find again in moto."""

    subnet_ids: dict[str, str]  # the program's subnet id -> moto's
    compute_subnet: str  # moto's id of the subnet the head and pools use
    compute_cidr: str
    bucket: str
    head_instance_id: str
    head_interface: str  # stand-in "stable-head-address"
    groups: dict[str, str]  # pool -> Auto Scaling group name
    document: str  # the apply-config document's name
    manifest_key: str = ""
    parameters: dict[str, str] = field(default_factory=dict)  # name -> value as put


def _one(run: OfflineRun, type_: str) -> RecordedResource:
    found = run.of_type(type_)
    if len(found) != 1:
        raise LookupError(f"expected one {type_}, the program registered {len(found)}")
    return found[0]


def _tags(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def store_key(body: bytes) -> str:
    """A config store key: ``config/<sha256 of the content>`` (what the agent verifies)."""
    return contract.store_key(body)


def publish_config(run: OfflineRun, aws: MotoServer, bucket: str) -> str:
    """Upload the store objects the program registered (STORE_PATCHES applied) and a manifest
    that names them; returns the manifest's key. Objects are immutable (keyed by content), so
    publishing a changed configuration only adds objects."""
    s3 = aws.client("s3")
    manifest_param = next(
        r for r in run.of_type(PARAMETER) if r.inputs["name"].endswith(MANIFEST_SUFFIX)
    )
    # The config store's objects (the image build bundles under images/ are not the nodes').
    contents = {
        r.inputs["key"]: r.inputs["content"]
        for r in run.of_type(OBJECT)
        if r.inputs["key"].startswith("config/")
    }
    manifest: dict[str, dict[str, str]] = json.loads(contents.pop(manifest_param.inputs["value"]))
    for files in manifest.values():
        for path, key in files.items():
            text = contents[key]
            if path in STORE_PATCHES:
                text = STORE_PATCHES[path](text)
                files[path] = store_key(text.encode())
            s3.put_object(Bucket=bucket, Key=files[path], Body=text.encode())
    body = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    key = store_key(body)
    s3.put_object(Bucket=bucket, Key=key, Body=body)
    return key


def deploy(run: OfflineRun, aws: MotoServer) -> Deployment:
    ec2, ssm = aws.client("ec2"), aws.client("ssm")

    vpc = ec2.create_vpc(CidrBlock=_one(run, VPC).inputs["cidrBlock"])["Vpc"]["VpcId"]
    subnet_ids = {}
    for subnet in run.of_type(SUBNET):
        created = ec2.create_subnet(
            VpcId=vpc,
            CidrBlock=subnet.inputs["cidrBlock"],
            AvailabilityZone=subnet.inputs["availabilityZone"],
        )
        subnet_ids[str(subnet.id)] = created["Subnet"]["SubnetId"]

    bucket = str(_one(run, BUCKET).outputs["bucket"])
    aws.client("s3").create_bucket(Bucket=bucket)

    secret = _one(run, SECRET)
    aws.client("secretsmanager").create_secret(
        Name=secret.inputs["name"],
        SecretBinary=base64.b64decode(_one(run, SECRET_VERSION).inputs["secretBinary"]),
        Tags=_tags(secret.inputs.get("tags") or {}),
    )

    head = _one(run, INSTANCE)
    compute_subnet = subnet_ids[head.inputs["subnetId"]]
    # Stand-in "stable-head-address": the head instance runs on an interface that outlives it.
    head_interface = aws.client("ec2").create_network_interface(
        SubnetId=compute_subnet, Description=f"{head.name}: the head node's stable address"
    )["NetworkInterface"]["NetworkInterfaceId"]
    head_id = launch_head(run, aws, head_interface)
    head_address = instance_address(aws, head_id)

    manifest_key = publish_config(run, aws, bucket)
    # The values only AWS knows once it has made the resource: the head node's address.
    live_values = {HEAD_ADDRESS_SUFFIX: head_address, MANIFEST_SUFFIX: manifest_key}
    parameters = {}
    for param in run.of_type(PARAMETER):
        name = param.inputs["name"]
        value = next((v for s, v in live_values.items() if name.endswith(s)), param.inputs["value"])
        ssm.put_parameter(Name=name, Value=value, Type=param.inputs["type"], Overwrite=True)
        parameters[name] = value

    document = _one(run, DOCUMENT)
    ssm.create_document(
        Name=document.inputs["name"],
        Content=document.inputs["content"],
        DocumentType=document.inputs["documentType"],
        DocumentFormat=document.inputs["documentFormat"],
    )

    templates = {str(t.id): t for t in run.of_type(LAUNCH_TEMPLATE)}
    groups = {}
    for group in run.of_type(GROUP):
        template = templates[group.inputs["launchTemplate"]["id"]]
        groups[_pool_of(group)] = create_group(aws, template, group, subnet_ids)

    return Deployment(
        subnet_ids=subnet_ids,
        compute_subnet=compute_subnet,
        compute_cidr=compute_cidr(run),
        bucket=bucket,
        head_instance_id=head_id,
        head_interface=head_interface,
        groups=groups,
        document=document.inputs["name"],
        manifest_key=manifest_key,
        parameters=parameters,
    )


def compute_cidr(run: OfflineRun) -> str:
    """The CIDR of the subnet the head node (and every pool) is placed in."""
    head = _one(run, INSTANCE)
    return str(
        next(s.inputs["cidrBlock"] for s in run.of_type(SUBNET) if s.id == head.inputs["subnetId"])
    )


def launch_head(run: OfflineRun, aws: MotoServer, interface: str) -> str:
    """The head instance as the program describes it (type, user data, tags), on the network
    interface ``interface`` (stand-in "stable-head-address")."""
    head = _one(run, INSTANCE)
    reservation = aws.client("ec2").run_instances(
        ImageId=PLACEHOLDER_AMI,
        InstanceType=head.inputs["instanceType"],
        MinCount=1,
        MaxCount=1,
        NetworkInterfaces=[{"DeviceIndex": 0, "NetworkInterfaceId": interface}],
        UserData=base64.b64decode(head.inputs["userDataBase64"]),  # gzip, as EC2 gets it
        TagSpecifications=[{"ResourceType": "instance", "Tags": _tags(head.inputs["tags"])}],
    )
    return str(reservation["Instances"][0]["InstanceId"])


def instance_address(aws: MotoServer, instance_id: str) -> str:
    found = aws.client("ec2").describe_instances(InstanceIds=[instance_id])
    return str(found["Reservations"][0]["Instances"][0]["PrivateIpAddress"])


def _pool_of(group: RecordedResource) -> str:
    tags = {t["key"]: t["value"] for t in group.inputs["tags"]}
    return tags[contract.POOL_TAG]


def create_group(
    aws: MotoServer, template: RecordedResource, group: RecordedResource, subnets: dict[str, str]
) -> str:
    """The pool's launch template (image, type, user data: what a node boots from) and its
    Auto Scaling group at the program's sizes, tagged as the program tags it."""
    created = aws.client("ec2").create_launch_template(
        LaunchTemplateName=template.inputs["name"],
        LaunchTemplateData={
            "ImageId": PLACEHOLDER_AMI,
            "InstanceType": template.inputs["instanceType"],
            "UserData": template.inputs["userData"],
        },
    )
    name = str(group.inputs["name"])
    aws.client("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName=name,
        MinSize=group.inputs["minSize"],
        MaxSize=group.inputs["maxSize"],
        DesiredCapacity=group.inputs["desiredCapacity"],
        VPCZoneIdentifier=",".join(subnets[s] for s in group.inputs["vpcZoneIdentifiers"]),
        LaunchTemplate={
            "LaunchTemplateId": created["LaunchTemplate"]["LaunchTemplateId"],
            "Version": "$Latest",
        },
        Tags=[
            {"Key": t["key"], "Value": t["value"], "PropagateAtLaunch": t["propagateAtLaunch"]}
            for t in group.inputs["tags"]
        ],
    )
    return name
