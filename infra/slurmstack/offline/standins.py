"""Realistic stand-in outputs for resources and provider functions, shaped like AWS's.

Every value is derived from the resource's type and logical name, so two runs of the same
program produce the same ids, and a value that depends on an id (an ARN, a DNS name) looks
like what AWS would return. Nothing here talks to AWS.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ACCOUNT_ID = "123456789012"
DEFAULT_REGION = "us-east-1"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def hex_id(prefix: str, *parts: str, length: int = 17) -> str:
    """``prefix-`` plus hex digits, e.g. ``i-0a1b2c3d4e5f60718`` (EC2 ids have 17)."""
    return f"{prefix}-{_digest(prefix, *parts)[:length]}"


def stand_in_bytes(length: int, *parts: str) -> bytes:
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.sha256("\0".join((*parts, str(counter))).encode()).digest()
        counter += 1
    return out[:length]


@dataclass(frozen=True)
class Context:
    """What a stand-in knows: the resource's type token, logical name and inputs."""

    type: str
    name: str
    inputs: dict[str, Any]
    region: str
    # subnet id -> CIDR, network interface id -> its private address
    known: Mapping[str, str] = field(default_factory=dict)
    account: str = ACCOUNT_ID

    @property
    def partition(self) -> str:
        if self.region.startswith("cn-"):
            return "aws-cn"
        if self.region.startswith("us-gov-"):
            return "aws-us-gov"
        return "aws"

    def arn(self, service: str, resource: str, *, region: bool = True, account: bool = True) -> str:
        return (
            f"arn:{self.partition}:{service}:{self.region if region else ''}:"
            f"{self.account if account else ''}:{resource}"
        )

    def physical_name(self, key: str = "name", suffix_len: int = 7) -> str:
        """The given name, or Pulumi-style auto-naming: logical name + random hex suffix."""
        given = self.inputs.get(key)
        if isinstance(given, str) and given:
            return given
        return f"{self.name}-{_digest('auto', self.type, self.name)[:suffix_len]}"


StandIn = Callable[[Context], tuple[str, dict[str, Any]]]


def _private_ip(ctx: Context, subnet_key: str = "subnetId") -> str:
    """An address inside the resource's subnet (AWS keeps the first four and the last address
    of a subnet), stable per resource; somewhere in 10.0.0.0/8 when the subnet is unknown."""
    cidr = ctx.known.get(str(ctx.inputs.get(subnet_key, "")))
    network = ipaddress.IPv4Network(cidr) if cidr else ipaddress.IPv4Network("10.0.0.0/8")
    usable = max(network.num_addresses - 5, 1)
    offset = 4 + int(_digest("ip", ctx.name)[:8], 16) % usable
    return str(network.network_address + offset)


def _vpc(ctx: Context) -> tuple[str, dict[str, Any]]:
    vid = hex_id("vpc", ctx.name)
    return vid, {
        "arn": ctx.arn("ec2", f"vpc/{vid}"),
        "defaultRouteTableId": hex_id("rtb", ctx.name, "main"),
    }


def _simple(prefix: str, arn_kind: str | None = None) -> StandIn:
    def make(ctx: Context) -> tuple[str, dict[str, Any]]:
        rid = hex_id(prefix, ctx.type, ctx.name)
        state: dict[str, Any] = {}
        if arn_kind:
            state["arn"] = ctx.arn("ec2", f"{arn_kind}/{rid}")
        return rid, state

    return make


def _eip(ctx: Context) -> tuple[str, dict[str, Any]]:
    alloc = hex_id("eipalloc", ctx.name)
    octets = bytes.fromhex(_digest("eip", ctx.name)[:4])
    return alloc, {"allocationId": alloc, "publicIp": f"198.51.{octets[0]}.{octets[1]}"}


def _security_group(ctx: Context) -> tuple[str, dict[str, Any]]:
    sid = hex_id("sg", ctx.name)
    return sid, {"arn": ctx.arn("ec2", f"security-group/{sid}"), "name": ctx.physical_name()}


def _sg_rule(ctx: Context) -> tuple[str, dict[str, Any]]:
    rid = hex_id("sgr", ctx.type, ctx.name)
    return rid, {"securityGroupRuleId": rid, "arn": ctx.arn("ec2", f"security-group-rule/{rid}")}


def _network_interface(ctx: Context) -> tuple[str, dict[str, Any]]:
    eni = hex_id("eni", ctx.type, ctx.name)
    ip = _private_ip(ctx)
    return eni, {
        "arn": ctx.arn("ec2", f"network-interface/{eni}"),
        "privateIp": ip,
        "privateIps": [ip],
        "privateDnsName": f"ip-{ip.replace('.', '-')}.ec2.internal",
        "macAddress": "0e:"
        + ":".join(_digest("mac", ctx.name)[i : i + 2] for i in range(0, 10, 2)),
    }


def _instance(ctx: Context) -> tuple[str, dict[str, Any]]:
    iid = hex_id("i", ctx.name)
    primary = ctx.inputs.get("primaryNetworkInterface")
    eni = primary.get("networkInterfaceId") if isinstance(primary, dict) else None
    # An instance launched with an existing interface has that interface's address.
    ip = ctx.known.get(str(eni)) if eni else None
    ip = ip or _private_ip(ctx)
    state: dict[str, Any] = {
        "arn": ctx.arn("ec2", f"instance/{iid}"),
        "privateIp": ip,
        "privateDns": f"ip-{ip.replace('.', '-')}.ec2.internal",
        "primaryNetworkInterfaceId": eni or hex_id("eni", ctx.name),
        "instanceState": "running",
    }
    if ctx.inputs.get("associatePublicIpAddress"):
        octets = bytes.fromhex(_digest("pub", ctx.name)[:4])
        state["publicIp"] = f"203.0.{octets[0]}.{octets[1]}"
    return iid, state


def _launch_template(ctx: Context) -> tuple[str, dict[str, Any]]:
    lid = hex_id("lt", ctx.name)
    return lid, {
        "arn": ctx.arn("ec2", f"launch-template/{lid}"),
        "latestVersion": 1,
        "defaultVersion": 1,
        "name": ctx.physical_name(),
    }


def _placement_group(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name()
    pgid = hex_id("pg", ctx.name)
    return name, {"arn": ctx.arn("ec2", f"placement-group/{name}"), "placementGroupId": pgid}


def _asg(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name()
    uid = _digest("asg", ctx.name)
    uuid = f"{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:32]}"
    return name, {
        "name": name,
        "arn": ctx.arn("autoscaling", f"autoScalingGroup:{uuid}:autoScalingGroupName/{name}"),
    }


def _load_balancer(ctx: Context) -> tuple[str, dict[str, Any]]:
    """A Network Load Balancer: its id is its ARN (loadbalancer/net/<name>/<16 hex>); its
    DNS name is <name>-<16 hex>.elb.<region>.amazonaws.com, as ELB hands them out."""
    name = ctx.physical_name()
    suffix = _digest("elb", ctx.name)[:16]
    arn = ctx.arn("elasticloadbalancing", f"loadbalancer/net/{name}/{suffix}")
    return arn, {
        "arn": arn,
        "name": name,
        "dnsName": f"{name}-{suffix}.elb.{ctx.region}.amazonaws.com",
    }


def _target_group(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name()
    arn = ctx.arn("elasticloadbalancing", f"targetgroup/{name}/{_digest('tg', ctx.name)[:16]}")
    return arn, {"arn": arn, "name": name}


def _listener(ctx: Context) -> tuple[str, dict[str, Any]]:
    balancer = str(ctx.inputs.get("loadBalancerArn", ""))
    prefix = (
        balancer.replace(":loadbalancer/", ":listener/", 1)
        if balancer
        else ctx.arn("elasticloadbalancing", f"listener/net/{ctx.name}")
    )
    arn = f"{prefix}/{_digest('listener', ctx.name)[:16]}"
    return arn, {"arn": arn}


def _volume(ctx: Context) -> tuple[str, dict[str, Any]]:
    vid = hex_id("vol", ctx.name)
    return vid, {"arn": ctx.arn("ec2", f"volume/{vid}")}


def _lustre(ctx: Context) -> tuple[str, dict[str, Any]]:
    fid = hex_id("fs", ctx.type, ctx.name)
    deployment = str(ctx.inputs.get("deploymentType", ""))
    # SCRATCH_1 file systems mount as "fsx"; every other type gets an 8-character name.
    mount = "fsx" if deployment == "SCRATCH_1" else _digest("mount", ctx.name)[:8]
    return fid, {
        "arn": ctx.arn("fsx", f"file-system/{fid}"),
        "dnsName": f"{fid}.fsx.{ctx.region}.amazonaws.com",
        "mountName": mount,
        "networkInterfaceIds": [hex_id("eni", ctx.name, str(i)) for i in range(2)],
        "ownerId": ctx.account,
    }


def _dra(ctx: Context) -> tuple[str, dict[str, Any]]:
    did = hex_id("dra", ctx.name)
    return did, {"arn": ctx.arn("fsx", f"association/{did}"), "associationId": did}


def _efs(ctx: Context) -> tuple[str, dict[str, Any]]:
    fid = hex_id("fs", ctx.type, ctx.name, length=8)
    return fid, {
        "arn": ctx.arn("elasticfilesystem", f"file-system/{fid}"),
        "dnsName": f"{fid}.efs.{ctx.region}.amazonaws.com",
        "ownerId": ctx.account,
    }


def _mount_target(ctx: Context) -> tuple[str, dict[str, Any]]:
    mid = hex_id("fsmt", ctx.name)
    return mid, {"ipAddress": _private_ip(ctx), "networkInterfaceId": hex_id("eni", ctx.name)}


def _bucket(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name("bucket")
    return name, {
        "bucket": name,
        "arn": f"arn:{ctx.partition}:s3:::{name}",
        "bucketDomainName": f"{name}.s3.amazonaws.com",
        "bucketRegionalDomainName": f"{name}.s3.{ctx.region}.amazonaws.com",
    }


def _bucket_child(ctx: Context) -> tuple[str, dict[str, Any]]:
    return str(ctx.inputs.get("bucket", ctx.name)), {}


def _bucket_object(ctx: Context) -> tuple[str, dict[str, Any]]:
    content = str(ctx.inputs.get("content", ""))
    return str(ctx.inputs.get("key", ctx.name)), {
        "etag": hashlib.md5(content.encode(), usedforsecurity=False).hexdigest(),
        "versionId": _digest("version", ctx.name)[:32],
    }


def _secret(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name()
    arn = ctx.arn("secretsmanager", f"secret:{name}-{_digest('secret', name)[:6]}")
    return arn, {"arn": arn}


def _secret_version(ctx: Context) -> tuple[str, dict[str, Any]]:
    version = _digest("secret-version", ctx.name)
    vid = f"{version[:8]}-{version[8:12]}-{version[12:16]}-{version[16:20]}-{version[20:32]}"
    return f"{ctx.inputs.get('secretId', '')}|{vid}", {
        "versionId": vid,
        "arn": ctx.inputs.get("secretId", ""),
    }


def _role(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name()
    return name, {
        "arn": ctx.arn("iam", f"role/{name}", region=False),
        "uniqueId": "AROA" + _digest("role", name)[:17].upper(),
    }


def _instance_profile(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name()
    return name, {
        "arn": ctx.arn("iam", f"instance-profile/{name}", region=False),
        "uniqueId": "AIPA" + _digest("profile", name)[:17].upper(),
    }


def _ssm_parameter(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name()
    return name, {"arn": ctx.arn("ssm", f"parameter/{name.lstrip('/')}"), "version": 1}


def _ssm_document(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name()
    return name, {
        "arn": ctx.arn("ssm", f"document/{name}"),
        "latestVersion": "1",
        "status": "Active",
    }


def _association(ctx: Context) -> tuple[str, dict[str, Any]]:
    d = _digest("association", ctx.name)
    aid = f"{d[:8]}-{d[8:12]}-{d[12:16]}-{d[16:20]}-{d[20:32]}"
    return aid, {"associationId": aid, "arn": ctx.arn("ssm", f"association/{aid}")}


def _imagebuilder(kind: str) -> StandIn:
    """Image Builder resources: ARN ``.../<kind>/<name>/<version>[/1]`` is their id."""

    def make(ctx: Context) -> tuple[str, dict[str, Any]]:
        name = ctx.physical_name().lower()
        version = str(ctx.inputs.get("version", "1.0.0"))
        build = "/1" if kind == "component" else ""
        arn = ctx.arn("imagebuilder", f"{kind}/{name}/{version}{build}")
        if kind in ("infrastructure-configuration", "distribution-configuration"):
            arn = ctx.arn("imagebuilder", f"{kind}/{name}")
        return arn, {"arn": arn, "dateCreated": "2026-01-01T00:00:00Z"}

    return make


def _image(ctx: Context) -> tuple[str, dict[str, Any]]:
    """An image's build: the AMI it made, in the recipe's region."""
    recipe = str(ctx.inputs.get("imageRecipeArn", ""))
    name = recipe.split("image-recipe/", 1)[-1].split("/", 1)[0] or ctx.name
    arn = ctx.arn("imagebuilder", f"image/{name}/1.0.0/1")
    ami = hex_id("ami", "image", ctx.name)
    return arn, {
        "arn": arn,
        "name": name,
        "osVersion": "Ubuntu 24",
        "platform": "Linux",
        "version": "1.0.0/1",
        "outputResources": [
            {"amis": [{"image": ami, "name": name, "region": ctx.region, "accountId": ctx.account}]}
        ],
    }


def _random_bytes(ctx: Context) -> tuple[str, dict[str, Any]]:
    length = int(ctx.inputs.get("length", 32))
    data = stand_in_bytes(length, "random-bytes", ctx.name)
    b64 = base64.b64encode(data).decode()
    return "none", {"base64": b64, "hex": data.hex()}


def _random_id(ctx: Context) -> tuple[str, dict[str, Any]]:
    data = stand_in_bytes(int(ctx.inputs.get("byteLength", 8)), "random-id", ctx.name)
    b64 = base64.urlsafe_b64encode(data).decode().rstrip("=")
    return b64, {"hex": data.hex(), "b64Url": b64, "dec": str(int.from_bytes(data, "big"))}


def _rds_instance(ctx: Context) -> tuple[str, dict[str, Any]]:
    identifier = ctx.physical_name("identifier")
    address = f"{identifier}.c{_digest('rds', ctx.region)[:11]}.{ctx.region}.rds.amazonaws.com"
    port = int(ctx.inputs.get("port", 3306))
    return identifier, {
        "address": address,
        "endpoint": f"{address}:{port}",
        "arn": ctx.arn("rds", f"db:{identifier}"),
        "resourceId": "db-" + _digest("rds-resource", ctx.name)[:26].upper(),
    }


def _random_password(ctx: Context) -> tuple[str, dict[str, Any]]:
    """Letters and digits (special=False), stable per logical name."""
    length = int(ctx.inputs.get("length", 16))
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    data = stand_in_bytes(length, "random-password", ctx.name)
    result = "".join(alphabet[b % len(alphabet)] for b in data)
    return "none", {"result": result, "bcryptHash": "$2a$10$" + _digest("bcrypt", result)[:53]}


def _topic(ctx: Context) -> tuple[str, dict[str, Any]]:
    arn = ctx.arn("sns", ctx.physical_name())
    return arn, {"arn": arn}


def _subscription(ctx: Context) -> tuple[str, dict[str, Any]]:
    """SNS names a subscription by its topic and a UUID."""
    uuid = _digest("subscription", ctx.name)
    arn = f"{ctx.inputs.get('topic', '')}:{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:32]}"
    return arn, {"arn": arn}


def _kms_key(ctx: Context) -> tuple[str, dict[str, Any]]:
    """KMS names a key by a UUID; its ARN is key/<that id>."""
    uuid = _digest("kms", ctx.name)
    kid = f"{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:32]}"
    return kid, {"arn": ctx.arn("kms", f"key/{kid}"), "keyId": kid}


def _kms_alias(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name()
    return name, {"arn": ctx.arn("kms", name)}


def _metric_alarm(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name()
    return name, {"arn": ctx.arn("cloudwatch", f"alarm:{name}")}


def _log_group(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name()
    return name, {"arn": ctx.arn("logs", f"log-group:{name}")}


def _budget(ctx: Context) -> tuple[str, dict[str, Any]]:
    name = ctx.physical_name()
    return f"{ctx.account}:{name}", {"arn": ctx.arn("budgets", f"budget/{name}", region=False)}


def _prometheus_workspace(ctx: Context) -> tuple[str, dict[str, Any]]:
    """Amazon Managed Service for Prometheus: ws-<uuid>, its ARN and its endpoint (the
    remote-write URL is the endpoint plus api/v1/remote_write; AMP User Guide)."""
    uuid = _digest("amp", ctx.name)
    wid = f"ws-{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:32]}"
    endpoint = f"https://aps-workspaces.{ctx.region}.amazonaws.com/workspaces/{wid}/"
    return wid, {"arn": ctx.arn("aps", f"workspace/{wid}"), "prometheusEndpoint": endpoint}


def _grafana_workspace(ctx: Context) -> tuple[str, dict[str, Any]]:
    """Amazon Managed Grafana: g-<10 hex>, its ARN and its endpoint."""
    wid = f"g-{_digest('amg', ctx.name)[:10]}"
    endpoint = f"{wid}.grafana-workspace.{ctx.region}.amazonaws.com"
    return wid, {"arn": ctx.arn("grafana", f"/workspaces/{wid}"), "endpoint": endpoint}


STAND_INS: dict[str, StandIn] = {
    "aws:amp/workspace:Workspace": _prometheus_workspace,
    "aws:grafana/workspace:Workspace": _grafana_workspace,
    "aws:sns/topic:Topic": _topic,
    "aws:sns/topicSubscription:TopicSubscription": _subscription,
    "aws:cloudwatch/logGroup:LogGroup": _log_group,
    "aws:cloudwatch/metricAlarm:MetricAlarm": _metric_alarm,
    "aws:kms/key:Key": _kms_key,
    "aws:kms/alias:Alias": _kms_alias,
    "aws:budgets/budget:Budget": _budget,
    "aws:ec2/vpc:Vpc": _vpc,
    "aws:ec2/subnet:Subnet": _simple("subnet", "subnet"),
    "aws:ec2/internetGateway:InternetGateway": _simple("igw", "internet-gateway"),
    "aws:ec2/eip:Eip": _eip,
    "aws:ec2/natGateway:NatGateway": _simple("nat"),
    "aws:ec2/routeTable:RouteTable": _simple("rtb", "route-table"),
    "aws:ec2/route:Route": _simple("r"),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": _simple("rtbassoc"),
    "aws:ec2/vpcEndpoint:VpcEndpoint": _simple("vpce", "vpc-endpoint"),
    "aws:ec2/securityGroup:SecurityGroup": _security_group,
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": _sg_rule,
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": _sg_rule,
    "aws:ec2/instance:Instance": _instance,
    "aws:ec2/networkInterface:NetworkInterface": _network_interface,
    "aws:ec2/launchTemplate:LaunchTemplate": _launch_template,
    "aws:ec2/placementGroup:PlacementGroup": _placement_group,
    "aws:ec2/volumeAttachment:VolumeAttachment": _simple("vai"),
    "aws:ebs/volume:Volume": _volume,
    "aws:autoscaling/group:Group": _asg,
    "aws:lb/loadBalancer:LoadBalancer": _load_balancer,
    "aws:lb/targetGroup:TargetGroup": _target_group,
    "aws:lb/listener:Listener": _listener,
    "aws:fsx/lustreFileSystem:LustreFileSystem": _lustre,
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": _dra,
    "aws:efs/fileSystem:FileSystem": _efs,
    "aws:efs/mountTarget:MountTarget": _mount_target,
    "aws:s3/bucket:Bucket": _bucket,
    "aws:s3/bucketVersioning:BucketVersioning": _bucket_child,
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": (
        _bucket_child
    ),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": _bucket_child,
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": _bucket_child,
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": _bucket_child,
    "aws:s3/bucketObjectv2:BucketObjectv2": _bucket_object,
    "aws:secretsmanager/secret:Secret": _secret,
    "aws:secretsmanager/secretVersion:SecretVersion": _secret_version,
    "aws:iam/role:Role": _role,
    "aws:iam/instanceProfile:InstanceProfile": _instance_profile,
    "aws:iam/rolePolicy:RolePolicy": lambda ctx: (
        f"{ctx.inputs.get('role', '')}:{ctx.physical_name()}",
        {},
    ),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": lambda ctx: (
        f"{ctx.inputs.get('role', '')}-{_digest('rpa', ctx.name)[:8]}",
        {},
    ),
    "aws:ssm/parameter:Parameter": _ssm_parameter,
    "aws:ssm/document:Document": _ssm_document,
    "aws:ssm/association:Association": _association,
    "random:index/randomBytes:RandomBytes": _random_bytes,
    "random:index/randomPassword:RandomPassword": _random_password,
    "random:index/randomId:RandomId": _random_id,
    "aws:rds/instance:Instance": _rds_instance,
    "aws:imagebuilder/component:Component": _imagebuilder("component"),
    "aws:imagebuilder/imageRecipe:ImageRecipe": _imagebuilder("image-recipe"),
    "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration": _imagebuilder(
        "infrastructure-configuration"
    ),
    "aws:imagebuilder/distributionConfiguration:DistributionConfiguration": _imagebuilder(
        "distribution-configuration"
    ),
    "aws:imagebuilder/image:Image": _image,
}


def stand_in(ctx: Context) -> tuple[str, dict[str, Any]]:
    """(id, outputs) for a resource: inputs echoed back, plus what AWS would compute."""
    make = STAND_INS.get(ctx.type)
    if make is None:
        rid, extra = f"{ctx.name}-{_digest('id', ctx.type, ctx.name)[:8]}", dict[str, Any]()
    else:
        rid, extra = make(ctx)
    state = dict(ctx.inputs)
    state.update(extra)
    state.setdefault("id", rid)
    if "tags" in state and "tagsAll" not in state:
        state["tagsAll"] = state["tags"]
    return rid, state


# Provider functions (invokes) the stack may call, and what they return.
def call_stand_in(token: str, args: dict[str, Any], region: str) -> dict[str, Any]:
    if token == "aws:index/getCallerIdentity:getCallerIdentity":
        return {
            "accountId": ACCOUNT_ID,
            "arn": f"arn:aws:iam::{ACCOUNT_ID}:user/slurmstack-offline",
            "userId": "AIDA" + _digest("user")[:17].upper(),
            "id": ACCOUNT_ID,
        }
    if token == "aws:index/getPartition:getPartition":
        return {
            "partition": Context("", "", {}, region).partition,
            "dnsSuffix": "amazonaws.com",
            "id": "aws",
        }
    if token == "aws:index/getRegion:getRegion":
        return {"name": region, "region": region, "id": region}
    if token == "aws:ec2/getAmi:getAmi":
        # An AMI the stack built (looked up by its id): one root snapshot, as Image Builder's
        # AMIs of the recipe's one EBS mapping have.
        filters = {f.get("name"): f.get("values", []) for f in args.get("filters") or []}
        ami = (filters.get("image-id") or ["ami-unknown"])[0]
        return {
            "id": ami,
            "imageId": ami,
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/sda1",
                    "ebs": {"snapshot_id": hex_id("snap", ami), "volume_type": "gp3"},
                    "noDevice": "",
                    "virtualName": "",
                }
            ],
        }
    if token == "aws:ssm/getParameter:getParameter":
        name = str(args.get("name", ""))
        value = hex_id("ami", name) if "ami" in name or "image" in name else f"stand-in:{name}"
        return {
            "name": name,
            "value": value,
            "insecureValue": value,
            "type": "String",
            "version": 1,
            "id": name,
        }
    return {}
