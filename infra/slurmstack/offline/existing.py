"""What exists in the account before the stack, as the offline engine answers lookups of it:
file systems of yours (read with ``get``), their network interfaces, security groups and rules,
your subnets and other buckets. A ``World`` says what that account looks like; the default is
one where everything the definition names exists and is reachable, so ``slurmstack plan``
shows a deployable cluster, and a test changes one fact to see the stack refuse.

Ids follow the stand-ins' scheme (derived from what is looked up), so runs are repeatable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from slurmstack.offline.standins import ACCOUNT_ID, hex_id

LUSTRE_TYPE = "aws:fsx/lustreFileSystem:LustreFileSystem"
OPENZFS_TYPE = "aws:fsx/openZfsFileSystem:OpenZfsFileSystem"
# TCP ports each kind of file system's group admits in the default world: Lustre's, and NFS.
ADMITTED_PORTS = ((988, 988), (1018, 1023), (2049, 2049))


@dataclass(frozen=True)
class World:
    """The account as the lookups see it. ``admitted_cidr``: what every file system's group
    admits on its ports (None: nothing); ``vpc_of``: file system id -> its VPC (default: the
    definition's); ``bucket_regions``: bucket -> Region (default: the stack's)."""

    vpc_id: str = "vpc-0offline000000000"
    subnet_cidrs: Mapping[str, str] = field(default_factory=dict)
    admitted_cidr: str | None = "10.0.0.0/8"
    vpc_of: Mapping[str, str] = field(default_factory=dict)
    bucket_regions: Mapping[str, str] = field(default_factory=dict)
    no_mount_target: frozenset[str] = frozenset()  # EFS ids with none in the cluster's zone


def world_for(definition: Mapping[str, Any]) -> World:
    """The default world of a definition: its VPC and subnets exist, with the CIDR it gives."""
    network = definition.get("network") or {}
    cidrs = {}
    if network.get("compute_subnet_id"):
        cidrs[network["compute_subnet_id"]] = network.get("compute_subnet_cidr") or "10.42.0.0/17"
    if network.get("public_subnet_id"):
        cidrs[network["public_subnet_id"]] = "10.42.128.0/24"
    return World(vpc_id=network.get("vpc_id") or World.vpc_id, subnet_cidrs=cidrs)


def _group(file_system_id: str) -> str:
    return hex_id("sg", "existing", file_system_id)


def _interface(file_system_id: str, index: int = 0) -> str:
    return hex_id("eni", "existing", file_system_id, str(index))


def read_stand_in(
    type_: str, rid: str, region: str, world: World, known: dict[str, str]
) -> dict[str, Any]:
    """The state a ``get`` of an existing resource finds (an FSx file system of yours)."""
    if type_ in (LUSTRE_TYPE, OPENZFS_TYPE):
        remember_interfaces(rid, known)
        state: dict[str, Any] = {
            "id": rid,
            "arn": f"arn:aws:fsx:{region}:{ACCOUNT_ID}:file-system/{rid}",
            "dnsName": f"{rid}.fsx.{region}.amazonaws.com",
            "networkInterfaceIds": [_interface(rid, i) for i in range(2)],
            "vpcId": world.vpc_of.get(rid, world.vpc_id),
            "ownerId": ACCOUNT_ID,
        }
        if type_ == LUSTRE_TYPE:
            state.update(
                mountName=hex_id("m", "existing-mount", rid, length=8)[2:],
                deploymentType="PERSISTENT_2",
            )
        return state
    return {"id": rid}


def call_existing(
    token: str, args: dict[str, Any], region: str, world: World, known: dict[str, str]
) -> dict[str, Any] | None:
    """A lookup of something that exists before the stack, or None for another token.
    ``known``: interface id -> the file system it belongs to (filled by the lookups)."""
    if token == "aws:ec2/getSubnet:getSubnet":
        sid = str(args.get("id", ""))
        return {"id": sid, "cidrBlock": world.subnet_cidrs.get(sid, "10.42.0.0/17"),
                "vpcId": world.vpc_id, "availabilityZone": f"{region}a"}  # fmt: skip
    if token == "aws:efs/getFileSystem:getFileSystem":
        fid = str(args.get("fileSystemId", ""))
        return {"id": fid, "fileSystemId": fid, "dnsName": f"{fid}.efs.{region}.amazonaws.com",
                "arn": f"arn:aws:elasticfilesystem:{region}:{ACCOUNT_ID}:file-system/{fid}"}  # fmt: skip
    if token == "aws:ec2/getNetworkInterfaces:getNetworkInterfaces":
        description = next(
            (f["values"][0] for f in args.get("filters", []) if f.get("name") == "description"), ""
        )
        fid = description.removeprefix("EFS mount target for ").rstrip("*")
        ids = [] if fid in world.no_mount_target or not fid else [_interface(fid)]
        remember_interfaces(fid, known)
        return {"id": region, "ids": ids}
    if token == "aws:ec2/getNetworkInterface:getNetworkInterface":
        iid = str(args.get("id", ""))
        owner = _file_system_of(iid, known)
        return {"id": iid, "vpcId": world.vpc_of.get(owner, world.vpc_id),
                "securityGroups": [_group(owner)], "subnetId": "subnet-existing",
                "availabilityZone": f"{region}a"}  # fmt: skip
    if token == "aws:vpc/getSecurityGroupRules:getSecurityGroupRules":
        groups = [v for f in args.get("filters", []) for v in f.get("values", [])]
        if world.admitted_cidr is None:
            return {"id": region, "ids": []}
        ids = [hex_id("sgr", g, str(p[0])) for g in groups for p in ADMITTED_PORTS]
        for g in groups:
            for p in ADMITTED_PORTS:
                known[hex_id("sgr", g, str(p[0]))] = f"{g}:{p[0]}:{p[1]}"
        return {"id": region, "ids": ids}
    if token == "aws:vpc/getSecurityGroupRule:getSecurityGroupRule":
        rid = str(args.get("securityGroupRuleId", ""))
        group, low, high = known.get(rid, "sg-unknown:0:0").split(":")
        return {"id": rid, "securityGroupRuleId": rid, "securityGroupId": group,
                "isEgress": False, "ipProtocol": "tcp", "fromPort": int(low), "toPort": int(high),
                "cidrIpv4": world.admitted_cidr or "", "referencedSecurityGroupId": "",
                "prefixListId": "", "description": "stand-in: the file system's clients",
                "arn": f"arn:aws:ec2:{region}:{ACCOUNT_ID}:security-group-rule/{rid}"}  # fmt: skip
    if token == "aws:s3/getBucket:getBucket":
        name = str(args.get("bucket", ""))
        home = world.bucket_regions.get(name, region)
        return {"id": name, "bucket": name, "arn": f"arn:aws:s3:::{name}", "region": home,
                "bucketRegion": home}  # fmt: skip
    return None


def _file_system_of(interface: str, known: Mapping[str, str]) -> str:
    """The file system an interface id was made for (the lookups record it)."""
    return known.get(interface, "")


def remember_interfaces(file_system_id: str, known: dict[str, str]) -> None:
    for index in range(2):
        known[_interface(file_system_id, index)] = file_system_id
