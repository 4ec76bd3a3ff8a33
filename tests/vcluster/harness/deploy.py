"""Put what the Pulumi program registers into moto, as `pulumi up` would create it.

The program runs under the offline engine (``slurmstack.offline``); every resource the nodes
read at boot is created in moto from the inputs the program gave it: the compute network and
its security groups, the bucket and the config store's objects and manifest, the munge secret,
the SSM parameters and the apply-config document, the alert topic, the head node's network
interface and the head instance launched on it, the pools' launch templates and Auto Scaling
groups. Nothing here
knows what the files say or how many there are; it copies what was registered. Values that
only exist once AWS has created a resource are moto's: the head node's address is the one moto
gave the head's interface (the parameter the program fills from the interface's address gets
it), the bucket is made under the name the program's stand-in output gave it.

One change on the way (standins.STORE_PATCHES): the head node's slurm.conf as this machine
runs it. The patched file is stored under its own hash and the manifest, stored the same way,
points at it, exactly as the config store does for any file.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from slurmstack import contract
from slurmstack.contract import Manifest, bundle_text, manifest_json, read_bundle, read_manifest
from slurmstack.offline import OfflineRun, RecordedResource

from .aws import MotoServer
from .node_slurm import NodeSlurm
from .standins import PLACEHOLDER_AMI, store_patches

VPC = "aws:ec2/vpc:Vpc"
SUBNET = "aws:ec2/subnet:Subnet"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
NETWORK_INTERFACE = "aws:ec2/networkInterface:NetworkInterface"
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
LIFECYCLE_HOOK = "aws:autoscaling/lifecycleHook:LifecycleHook"
TOPIC = "aws:sns/topic:Topic"

HEAD_ADDRESS_SUFFIX = f"/{contract.DeployParameter.HEAD_ADDRESS}"
MANIFEST_SUFFIX = f"/{contract.DeployParameter.CONFIG_MANIFEST}"


@dataclass
class Deployment:
    """What the harness needs to find again in moto."""

    subnet_ids: dict[str, str]  # the program's subnet id -> moto's
    compute_subnet: str  # moto's id of the subnet the head and pools use
    compute_cidr: str
    security_groups: dict[str, str]  # the program's security group id -> moto's
    bucket: str
    head_instance_id: str
    head_interface: str  # moto's id of the head node's own network interface
    groups: dict[str, str]  # pool -> Auto Scaling group name
    document: str  # the apply-config document's name
    manifest_key: str = ""
    parameters: dict[str, str] = field(default_factory=dict)  # name -> value as put
    # head_node.backup: the backup controller's instance and interface (moto's ids).
    backup_instance_id: str | None = None
    backup_interface: str | None = None

    def parameter(self, suffix: str) -> str:
        """The name of the parameter ending in ``suffix``."""
        return next(n for n in self.parameters if n.endswith(suffix))


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


def publish_config(run: OfflineRun, aws: MotoServer, bucket: str, slurm: NodeSlurm) -> str:
    """Upload the store objects the program registered (STORE_PATCHES applied to the files in
    its bundles) and a manifest that names them; returns the manifest's key. Objects are
    immutable (keyed by content), so publishing a changed configuration only adds objects."""
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
    manifest = read_manifest(contents.pop(manifest_param.inputs["value"]).encode())
    patched: dict[str, str] = {}  # bundle key as registered -> as published
    for bundle_key, text in contents.items():
        files = {path: body.decode() for path, body in read_bundle(text.encode()).items()}
        patches = store_patches(slurm)
        for path in set(files) & set(patches):
            # A path several roles receive with their own content (node.json): only the roles
            # listing this bundle's version of it get the patched one.
            listed = store_key(files[path].encode())
            files[path] = patches[path](files[path])
            for role_files in manifest.files.values():
                if role_files.get(path) == listed:
                    role_files[path] = store_key(files[path].encode())
        text = bundle_text(files)
        patched[bundle_key] = store_key(text.encode())
        s3.put_object(Bucket=bucket, Key=patched[bundle_key], Body=text.encode())
    bundles = {role: tuple(patched[k] for k in keys) for role, keys in manifest.bundles.items()}
    body = manifest_json(Manifest(files=manifest.files, bundles=bundles)).encode()
    key = store_key(body)
    s3.put_object(Bucket=bucket, Key=key, Body=body)
    return key


@dataclass(frozen=True)
class ExistingNetwork:
    """Your VPC's subnets a definition names (``network.vpc_id``): id -> CIDR, in ``zone``."""

    zone: str
    subnets: Mapping[str, str]


def deploy(
    run: OfflineRun,
    aws: MotoServer,
    slurm: NodeSlurm,
    existing: ExistingNetwork | None = None,
) -> Deployment:
    """``existing``: the subnets of your VPC, when the program makes no VPC: they exist before
    the stack, so the harness makes them in moto (in one VPC spanning them), as the operator
    has them."""
    ec2, ssm = aws.client("ec2"), aws.client("ssm")

    subnet_ids = {}
    if run.of_type(VPC):
        vpc = ec2.create_vpc(CidrBlock=_one(run, VPC).inputs["cidrBlock"])["Vpc"]["VpcId"]
    else:
        if existing is None:
            raise LookupError("the program makes no VPC and no existing network was given")
        vpc = create_existing_network(aws, existing, subnet_ids)
    for subnet in run.of_type(SUBNET):
        created = ec2.create_subnet(
            VpcId=vpc,
            CidrBlock=subnet.inputs["cidrBlock"],
            AvailabilityZone=subnet.inputs["availabilityZone"],
        )
        subnet_ids[str(subnet.id)] = created["Subnet"]["SubnetId"]

    bucket = str(_one(run, BUCKET).outputs["bucket"])
    # Outside us-east-1 S3 wants the Region named (a cluster of its own may use another).
    where = {} if aws.region == "us-east-1" else {"LocationConstraint": aws.region}
    aws.client("s3").create_bucket(
        Bucket=bucket, **({"CreateBucketConfiguration": where} if where else {})
    )

    # Every secret the program makes, with the value its version gives it (the munge key; the
    # accounting database's password), and the login pools' host key secrets made empty as
    # the program makes them (their first node stores the key).
    versions = {str(v.inputs["secretId"]): v.inputs for v in run.of_type(SECRET_VERSION)}
    for secret in run.of_type(SECRET):
        version = versions.get(str(secret.id), {})
        value: dict[str, Any] = {}
        if "secretBinary" in version:
            value = {"SecretBinary": base64.b64decode(version["secretBinary"])}
        elif "secretString" in version:
            value = {"SecretString": str(version["secretString"])}
        aws.client("secretsmanager").create_secret(
            Name=secret.inputs["name"], Tags=_tags(secret.inputs.get("tags") or {}), **value
        )

    security_groups = create_security_groups(run, aws, vpc)
    interface = head_interface(run)
    head_interface_id = create_interface(aws, interface, subnet_ids, security_groups)
    compute_subnet = subnet_ids[interface.inputs["subnetId"]]
    head_id = launch_head(run, aws, head_interface_id)
    head_address = interface_address(aws, head_interface_id)
    # head_node.backup: its instance on its own interface too, launched the same way.
    backup = controller_instance(run, BACKUP)
    backup_id = backup_interface_id = None
    if backup is not None:
        backup_interface = interface_of(run, backup)
        backup_interface_id = create_interface(aws, backup_interface, subnet_ids, security_groups)
        backup_id = launch_head(run, aws, backup_interface_id, which=BACKUP)

    manifest_key = publish_config(run, aws, bucket, slurm)
    # Values only AWS knows once it has made the resource: the head node's address (the
    # program publishes its interface's address, which the offline engine made up).
    live_values = {str(interface.outputs["privateIp"]): head_address}
    if backup is not None and backup_interface_id is not None:
        backup_address = interface_address(aws, backup_interface_id)
        live_values[str(interface_of(run, backup).outputs["privateIp"])] = backup_address
    live_values.update(subnet_ids)  # the compute subnet's id (elastic pools' launches)
    # The alert topic, which the head's alert relay finds through its parameter.
    for topic in run.of_type(TOPIC):
        arn = aws.client("sns").create_topic(Name=topic.inputs["name"])["TopicArn"]
        live_values[str(topic.outputs["arn"])] = arn
    parameters = {}
    for param in run.of_type(PARAMETER):
        name = param.inputs["name"]
        # insecureValue: the head's AMI parameter (an AMI id is no secret).
        raw = param.inputs["value"] if "value" in param.inputs else param.inputs["insecureValue"]
        value = live_values.get(raw, raw)
        if name.endswith(MANIFEST_SUFFIX):
            value = manifest_key  # the manifest as published here (STORE_PATCHES)
        ssm.put_parameter(Name=name, Value=value, Type=param.inputs["type"], Overwrite=True)
        parameters[name] = value

    # The apply-config document (the head node) and sync-nodes (every node).
    for each in run.of_type(DOCUMENT):
        ssm.create_document(
            Name=each.inputs["name"],
            Content=each.inputs["content"],
            DocumentType=each.inputs["documentType"],
            DocumentFormat=each.inputs["documentFormat"],
        )
    document = next(d for d in run.of_type(DOCUMENT) if d.inputs["name"].endswith("-apply-config"))

    templates = {str(t.id): t for t in run.of_type(LAUNCH_TEMPLATE)}
    groups = {}
    for group in run.of_type(GROUP):
        template = templates[launch_template_id(group)]
        groups[_pool_of(group)] = create_group(aws, template, group, subnet_ids, run)

    return Deployment(
        subnet_ids=subnet_ids,
        compute_subnet=compute_subnet,
        compute_cidr=compute_cidr(run, existing),
        security_groups=security_groups,
        bucket=bucket,
        head_instance_id=head_id,
        head_interface=head_interface_id,
        groups=groups,
        document=document.inputs["name"],
        manifest_key=manifest_key,
        parameters=parameters,
        backup_instance_id=backup_id,
        backup_interface=backup_interface_id,
    )


HEAD, BACKUP = "head", "backup"


def controller_instance(run: OfflineRun, which: str = HEAD) -> RecordedResource | None:
    """The head's instance, or the backup controller's (None without head_node.backup): EC2
    instances the program makes, told apart by their names (<cluster>-head[-backup])."""
    suffix = "-head" if which == HEAD else "-head-backup"
    found = [i for i in run.of_type(INSTANCE) if i.name.endswith(suffix)]
    return found[0] if found else None


def _controller(run: OfflineRun, which: str) -> RecordedResource:
    found = controller_instance(run, which)
    if found is None:
        raise LookupError(f"the program made no {which} instance")
    return found


def interface_of(run: OfflineRun, instance: RecordedResource) -> RecordedResource:
    eni = instance.inputs["primaryNetworkInterface"]["networkInterfaceId"]
    return next(i for i in run.of_type(NETWORK_INTERFACE) if str(i.id) == eni)


def head_interface(run: OfflineRun) -> RecordedResource:
    """The network interface the program launches the head instance on (its address for good)."""
    return interface_of(run, _controller(run, HEAD))


def compute_cidr(run: OfflineRun, existing: ExistingNetwork | None = None) -> str:
    """The CIDR of the subnet the head node's interface (and every pool) is placed in: one
    the program makes, or one of yours."""
    subnet = head_interface(run).inputs["subnetId"]
    made = {str(s.id): str(s.inputs["cidrBlock"]) for s in run.of_type(SUBNET)}
    return {**(existing.subnets if existing else {}), **made}[subnet]


def create_existing_network(
    aws: MotoServer, existing: ExistingNetwork, subnet_ids: dict[str, str]
) -> str:
    """Your VPC and the subnets the definition names, made in moto (one VPC spanning them);
    ``subnet_ids`` gets your subnet id -> moto's. Returns moto's VPC id."""
    networks = [ipaddress.IPv4Network(c) for c in existing.subnets.values()]
    span = networks[0]
    while not all(n.subnet_of(span) for n in networks):
        span = span.supernet()
    ec2 = aws.client("ec2")
    vpc = str(ec2.create_vpc(CidrBlock=str(span))["Vpc"]["VpcId"])
    for subnet_id, cidr in existing.subnets.items():
        created = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=existing.zone)
        subnet_ids[subnet_id] = created["Subnet"]["SubnetId"]
    return vpc


def create_security_groups(run: OfflineRun, aws: MotoServer, vpc: str) -> dict[str, str]:
    """The program's security groups (without their rules: the fabric filters nothing);
    returns the program's id -> moto's."""
    ec2 = aws.client("ec2")
    out = {}
    for group in run.of_type(SECURITY_GROUP):
        created = ec2.create_security_group(
            # The image build group has a name prefix only: its logical name stands in.
            GroupName=group.inputs.get("name") or group.name,
            Description=group.inputs["description"],
            VpcId=vpc,
            TagSpecifications=[
                {"ResourceType": "security-group", "Tags": _tags(group.inputs.get("tags") or {})}
            ],
        )
        out[str(group.id)] = created["GroupId"]
    return out


def create_interface(
    aws: MotoServer,
    interface: RecordedResource,
    subnets: dict[str, str],
    security_groups: dict[str, str],
) -> str:
    """A network interface as the program describes it; moto gives it its address (the
    program names none: AWS picks one in the subnet). Returns moto's id."""
    created = aws.client("ec2").create_network_interface(
        SubnetId=subnets[interface.inputs["subnetId"]],
        Groups=[security_groups[g] for g in interface.inputs.get("securityGroups") or []],
        Description=interface.inputs.get("description", ""),
        TagSpecifications=[
            {"ResourceType": "network-interface", "Tags": _tags(interface.inputs.get("tags") or {})}
        ],
    )
    return str(created["NetworkInterface"]["NetworkInterfaceId"])


def launch_head(run: OfflineRun, aws: MotoServer, interface: str, which: str = HEAD) -> str:
    """The head instance (or ``which`` BACKUP: the backup controller's) as the program
    describes it (type, user data, tags, metadata options), on the network interface
    ``interface`` (moto's id), as its ``primaryNetworkInterface`` says: the instance has the
    interface's address."""
    head = _controller(run, which)
    metadata = head.inputs.get("metadataOptions") or {}
    options = {"HttpTokens": "httpTokens", "HttpEndpoint": "httpEndpoint",
               "HttpPutResponseHopLimit": "httpPutResponseHopLimit"}  # fmt: skip
    reservation = aws.client("ec2").run_instances(
        ImageId=PLACEHOLDER_AMI,
        InstanceType=head.inputs["instanceType"],
        MinCount=1,
        MaxCount=1,
        NetworkInterfaces=[{"DeviceIndex": 0, "NetworkInterfaceId": interface}],
        UserData=base64.b64decode(head.inputs["userDataBase64"]),  # gzip, as EC2 gets it
        MetadataOptions={k: metadata[v] for k, v in options.items() if v in metadata},
        TagSpecifications=[{"ResourceType": "instance", "Tags": _tags(head.inputs["tags"])}],
    )
    return str(reservation["Instances"][0]["InstanceId"])


def interface_address(aws: MotoServer, interface_id: str) -> str:
    found = aws.client("ec2").describe_network_interfaces(NetworkInterfaceIds=[interface_id])
    return str(found["NetworkInterfaces"][0]["PrivateIpAddress"])


def instance_address(aws: MotoServer, instance_id: str) -> str:
    found = aws.client("ec2").describe_instances(InstanceIds=[instance_id])
    return str(found["Reservations"][0]["Instances"][0]["PrivateIpAddress"])


def _metadata_options(given: dict[str, object]) -> dict[str, object]:
    """A launch template's metadata options as the program gives them, in EC2's words."""
    names = {"httpTokens": "HttpTokens", "httpEndpoint": "HttpEndpoint",
             "httpPutResponseHopLimit": "HttpPutResponseHopLimit",
             "instanceMetadataTags": "InstanceMetadataTags"}  # fmt: skip
    return {ec2: given[ours] for ours, ec2 in names.items() if given.get(ours) is not None}


def launch_template_id(group: RecordedResource) -> str:
    """The group's launch template: its own, or (a spot pool's) its mixed instances policy's."""
    if group.inputs.get("launchTemplate"):
        return str(group.inputs["launchTemplate"]["id"])
    policy = group.inputs["mixedInstancesPolicy"]["launchTemplate"]
    return str(policy["launchTemplateSpecification"]["launchTemplateId"])


def _pool_of(group: RecordedResource) -> str:
    """The group's pool, or a login pool's role (login/<pool>)."""
    tags = {t["key"]: t["value"] for t in group.inputs["tags"]}
    if contract.LOGIN_POOL_TAG in tags:
        return contract.login_role(tags[contract.LOGIN_POOL_TAG])
    return tags[contract.POOL_TAG]


def create_group(
    aws: MotoServer,
    template: RecordedResource,
    group: RecordedResource,
    subnets: dict[str, str],
    run: OfflineRun,
) -> str:
    """The pool's launch template (image, type, user data: what a node boots from) and its
    Auto Scaling group at the program's sizes, tagged as the program tags it, with its
    lifecycle hooks."""
    created = aws.client("ec2").create_launch_template(
        LaunchTemplateName=template.inputs["name"],
        LaunchTemplateData={
            "ImageId": PLACEHOLDER_AMI,
            "InstanceType": template.inputs["instanceType"],
            "UserData": template.inputs["userData"],
            "MetadataOptions": _metadata_options(template.inputs.get("metadataOptions") or {}),
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
    # The group's lifecycle hooks, as the program gives them (moto keeps them; stand-in
    # "asg-lifecycle" makes terminations wait in them).
    hooks = [h.inputs for h in run.of_type(LIFECYCLE_HOOK)]
    for hook in [h for h in hooks if h["autoscalingGroupName"] == group.outputs["name"]]:
        aws.client("autoscaling").put_lifecycle_hook(
            AutoScalingGroupName=name,
            LifecycleHookName=hook["name"],
            LifecycleTransition=hook["lifecycleTransition"],
            HeartbeatTimeout=hook["heartbeatTimeout"],
            DefaultResult=hook["defaultResult"],
        )
    return name
