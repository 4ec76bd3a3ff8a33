"""Network: a new VPC with a public subnet (NAT) and a private compute subnet in the
cluster's one AZ, or the definition's existing VPC and subnets (then nothing is created)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws.ec2 as ec2

from slurmstack.contract import resource_name
from slurmstack.plan import ClusterPlan
from slurmstack.stack.common import EVERYWHERE_V4, Role, tags


@dataclass(frozen=True)
class NetworkRefs:
    """What the other components need from the network, created or existing."""

    vpc_id: pulumi.Input[str]
    compute_subnet_id: pulumi.Input[str]
    public_subnet_id: pulumi.Input[str] | None
    # Resources whose completion means instances in the compute subnet can reach the
    # internet (through the NAT) and S3 (through the gateway endpoint) at boot.
    ready: tuple[pulumi.Resource, ...] = ()
    # The same for the public subnet (the internet gateway route), where the head node sits
    # when ssh_cidrs asks for SSH.
    public_ready: tuple[pulumi.Resource, ...] = ()


def existing_network(plan: ClusterPlan) -> NetworkRefs:
    net = plan.spec.network
    if net.vpc_id is None or net.compute_subnet_id is None:
        raise ValueError("existing_network needs network.vpc_id and network.compute_subnet_id")
    return NetworkRefs(
        vpc_id=net.vpc_id,
        compute_subnet_id=net.compute_subnet_id,
        public_subnet_id=net.public_subnet_id,
    )


class Network(pulumi.ComponentResource):
    """VPC, internet gateway, public subnet + NAT gateway, private compute subnet, routes and
    an S3 gateway endpoint (dataset and checkpoint traffic stays off the NAT, which bills
    per GB)."""

    refs: NetworkRefs

    def __init__(self, plan: ClusterPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        name = resource_name(plan.name, Role.NETWORK)
        super().__init__("slurmstack:stack:Network", name, None, opts)
        if (
            plan.vpc_cidr is None
            or plan.public_subnet_cidr is None
            or plan.compute_subnet_cidr is None
        ):
            raise ValueError("a new VPC needs network.vpc_cidr")
        child = pulumi.ResourceOptions(parent=self)
        cluster = plan.name

        def tagged(suffix: str) -> dict[str, str]:
            return tags(plan, Role.NETWORK, f"{cluster}-{suffix}")

        vpc = ec2.Vpc(
            f"{cluster}-vpc",
            cidr_block=str(plan.vpc_cidr),
            enable_dns_support=True,
            # Lustre, EFS and the SSM endpoints are reached by DNS name.
            enable_dns_hostnames=True,
            tags=tagged("vpc"),
            opts=child,
        )
        igw = ec2.InternetGateway(f"{cluster}-igw", vpc_id=vpc.id, tags=tagged("igw"), opts=child)
        public = ec2.Subnet(
            f"{cluster}-public",
            vpc_id=vpc.id,
            cidr_block=str(plan.public_subnet_cidr),
            availability_zone=plan.availability_zone,
            # Only the NAT gateway (its own Elastic IP) and, when ssh_cidrs asks for it,
            # the head node live here; nothing gets a public address by default.
            map_public_ip_on_launch=False,
            tags=tagged("public"),
            opts=child,
        )
        compute = ec2.Subnet(
            f"{cluster}-compute",
            vpc_id=vpc.id,
            cidr_block=str(plan.compute_subnet_cidr),
            availability_zone=plan.availability_zone,
            map_public_ip_on_launch=False,
            tags=tagged("compute"),
            opts=child,
        )
        eip = ec2.Eip(f"{cluster}-nat", domain="vpc", tags=tagged("nat"), opts=child)
        nat = ec2.NatGateway(
            f"{cluster}-nat",
            subnet_id=public.id,
            allocation_id=eip.allocation_id,
            tags=tagged("nat"),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
        )
        public_rt = ec2.RouteTable(
            f"{cluster}-public", vpc_id=vpc.id, tags=tagged("public"), opts=child
        )
        compute_rt = ec2.RouteTable(
            f"{cluster}-compute", vpc_id=vpc.id, tags=tagged("compute"), opts=child
        )
        # Separate Route resources rather than inline routes: the S3 endpoint adds its own
        # route to the compute table, which inline routes would fight over on every update.
        public_default = ec2.Route(
            f"{cluster}-public-default",
            route_table_id=public_rt.id,
            destination_cidr_block=EVERYWHERE_V4,
            gateway_id=igw.id,
            opts=child,
        )
        compute_default = ec2.Route(
            f"{cluster}-compute-default",
            route_table_id=compute_rt.id,
            destination_cidr_block=EVERYWHERE_V4,
            nat_gateway_id=nat.id,
            opts=child,
        )
        public_assoc = ec2.RouteTableAssociation(
            f"{cluster}-public", subnet_id=public.id, route_table_id=public_rt.id, opts=child
        )
        compute_assoc = ec2.RouteTableAssociation(
            f"{cluster}-compute", subnet_id=compute.id, route_table_id=compute_rt.id, opts=child
        )
        s3_endpoint = ec2.VpcEndpoint(
            f"{cluster}-s3",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{plan.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[compute_rt.id, public_rt.id],
            tags=tagged("s3"),
            opts=child,
        )
        self.vpc = vpc
        self.refs = NetworkRefs(
            vpc_id=vpc.id,
            compute_subnet_id=compute.id,
            public_subnet_id=public.id,
            ready=(compute_default, compute_assoc, s3_endpoint),
            public_ready=(public_default, public_assoc, s3_endpoint),
        )
        self.register_outputs({"vpc_id": vpc.id, "compute_subnet_id": compute.id})
