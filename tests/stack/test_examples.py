"""Every example through the real program (infra/__main__.py) under mocks: what is created,
how many, and the safety properties every resource must have."""

from __future__ import annotations

import gzip
import ipaddress
import json
from collections import Counter
from typing import Any

import pytest

from slurmstack.contract import CLUSTER_TAG, POOL_TAG, ROLE_TAG
from slurmstack.offline import OfflineRun
from slurmstack.plan import ClusterPlan
from slurmstack.render import USER_DATA_LIMIT, user_data
from slurmstack.spec import CapacityType
from slurmstack.stack.user_data import ec2_user_data
from support.stack import (
    T_ASG,
    T_BUCKET,
    T_DRA,
    T_EFS,
    T_EGRESS,
    T_HOOK,
    T_INGRESS,
    T_INSTANCE,
    T_LT,
    T_LUSTRE,
    T_MOUNT_TARGET,
    T_PARAM,
    T_PASSWORD,
    T_PG,
    T_RANDOM,
    T_SECRET,
    T_SECRET_VERSION,
    T_SSE,
    T_VOLUME,
    user_data_bytes,
    user_data_texts,
)

pytestmark = pytest.mark.stack

Example = tuple[dict[str, Any], ClusterPlan, OfflineRun]

# Resource types that take no tags in the AWS provider (or, for the random provider, are
# not AWS resources at all). Every other resource must carry slurmstack:role.
UNTAGGABLE = {
    "aws:ec2/route:Route",
    "aws:ec2/routeTableAssociation:RouteTableAssociation",
    "aws:ec2/volumeAttachment:VolumeAttachment",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
    "aws:s3/bucketPolicy:BucketPolicy",
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
    T_SSE,
    "aws:s3/bucketVersioning:BucketVersioning",
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "aws:efs/mountTarget:MountTarget",
    T_SECRET_VERSION,
    T_RANDOM,
    T_PASSWORD,
    T_ASG,  # tagged through its `tags` list of {key, value, propagate_at_launch}
    T_HOOK,  # a lifecycle hook takes no tags
    "aws:ec2/tag:Tag",  # is one tag of another resource (an AMI's root snapshot)
    "aws:kms/alias:Alias",  # a name of a key, which is tagged
}


def expected_counts(plan: ClusterPlan, store_objects: int) -> Counter[str]:
    """What the stack should create for a plan, counted independently of the stack code."""
    spec = plan.spec
    c: Counter[str] = Counter()
    if spec.network.vpc_id is None:
        c.update(
            {
                "aws:ec2/vpc:Vpc": 1,
                "aws:ec2/internetGateway:InternetGateway": 1,
                "aws:ec2/subnet:Subnet": 2,
                "aws:ec2/eip:Eip": 1,
                "aws:ec2/natGateway:NatGateway": 1,
                "aws:ec2/routeTable:RouteTable": 2,
                "aws:ec2/route:Route": 2,
                "aws:ec2/routeTableAssociation:RouteTableAssociation": 2,
                "aws:ec2/vpcEndpoint:VpcEndpoint": 1,
            }
        )
    storage_group = plan.lustre is not None or spec.storage.home is not None
    c["aws:ec2/securityGroup:SecurityGroup"] = 3 if storage_group else 2
    # head: 3 Slurm port ranges x (workers, self) + one per ssh CIDR; workers: self, head
    # ingress; storage: Lustre 2 port ranges x 3 peers, NFS x 2 peers, EFA extras.
    ingress = 6 + len(spec.network.ssh_cidrs) + 2
    # slurmdbd from the workers (sacct, sshare where jobs run), with accounting on.
    ingress += 1 if spec.slurm.accounting.enabled else 0
    egress = 1 + 2
    if plan.lustre is not None:
        ingress += 6
        if plan.lustre.efa:
            ingress += 1 + 2  # workers from storage; storage from self, workers
            egress += 1 + 2  # workers to storage; storage to self, workers
    if spec.storage.home is not None:
        ingress += 2
    if storage_group:
        egress += 1
    c[T_INGRESS] = ingress
    c[T_EGRESS] = egress
    c.update(
        {
            # One role (inline policy, profile) for the head node and one per pool.
            "aws:iam/role:Role": 1 + len(plan.pools),
            "aws:iam/rolePolicy:RolePolicy": 1 + len(plan.pools),
            "aws:iam/instanceProfile:InstanceProfile": 1 + len(plan.pools),
            "aws:s3/bucketPolicy:BucketPolicy": 1,
            T_RANDOM: 1,
            T_SECRET: 1,
            T_SECRET_VERSION: 1,
            T_BUCKET: 1,
            "aws:s3/bucketOwnershipControls:BucketOwnershipControls": 1,
            "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": 1,
            T_SSE: 1,
            "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": 1,
            T_INSTANCE: 1,
            # The head's address: its own network interface, kept across replacement.
            "aws:ec2/networkInterface:NetworkInterface": 1,
            T_VOLUME: 1,
            "aws:ec2/volumeAttachment:VolumeAttachment": 1,
            "aws:s3/bucketObjectv2:BucketObjectv2": store_objects,
            # apply-config (the head node) and sync-nodes (every node: files and people).
            "aws:ssm/document:Document": 2,
            "aws:ssm/association:Association": 2,
            T_LT: len(plan.pools),
            T_ASG: len(plan.pools),
            # Each pool's drain hook and join hook (launches wait until the node is in Slurm).
            T_HOOK: 2 * len(plan.pools),
        }
    )
    if spec.storage.bucket.versioning:
        c["aws:s3/bucketVersioning:BucketVersioning"] = 1
    # Accounting on (the default) with a database whose password the stack generates.
    accounting = spec.slurm.accounting
    if accounting.enabled and accounting.database.type.value != "external":
        c.update({T_PASSWORD: 1, T_SECRET: 1, T_SECRET_VERSION: 1})
    # head address, state volume id, bucket name, config manifest, the head's AMI for its Slurm
    # release, (Lustre 2), (EFS 1)
    params = 5
    if plan.lustre is not None:
        c[T_LUSTRE] = 1
        params += 2
        if plan.lustre.spec.s3_import_export is not None:
            c[T_DRA] = 1
    if spec.storage.home is not None:
        c[T_EFS] = 1
        c[T_MOUNT_TARGET] = 1
        params += 1
    if plan.elastic_pools:
        params += 1  # the compute subnet, which the power programs launch elastic nodes into
    # Observing: the alert topic (its ARN a parameter), one subscription per alert address, a
    # log group per log source (slurmdbd's with accounting), the budget when asked.
    observe = spec.observability
    params += 1
    c["aws:sns/topic:Topic"] = 1
    # The topic's own key and alias (CloudWatch alarms publish to it), and the head's two
    # recovery alarms (host failed: recover; OS hung: reboot) unless auto_recovery is off.
    c.update({"aws:kms/key:Key": 1, "aws:kms/alias:Alias": 1})
    if spec.head_node.auto_recovery:
        c["aws:cloudwatch/metricAlarm:MetricAlarm"] = 2
    if observe.alerts.email:
        c["aws:sns/topicSubscription:TopicSubscription"] = len(observe.alerts.email)
    c["aws:cloudwatch/logGroup:LogGroup"] += 5 if accounting.enabled else 4
    if observe.budget_monthly_usd is not None:
        c["aws:budgets/budget:Budget"] = 1
    c[T_PARAM] = params
    if spec.network.ssh_cidrs and (spec.network.vpc_id is None or spec.network.public_subnet_id):
        # The head node's public address (an Elastic IP on its network interface).
        c["aws:ec2/eip:Eip"] += 1
    # A named, existing placement group is used, not created.
    groups = sum(1 for p in plan.pools if p.placement_group and p.placement_group_name is None)
    if groups:
        c[T_PG] = groups
    # Node images: one per distinct (accelerator kind, architecture) among the nodes without an
    # AMI of their own; one build role, group and rule, one infrastructure configuration per
    # architecture, the shared agent object and two bundle objects (script, settings) per image.
    kinds = set()
    for role, facts in [("head", plan.head.facts), *((p.name, p.facts) for p in plan.pools)]:
        own = spec.head_node.ami if role == "head" else plan.pool(role).ami
        if (own or spec.image.ami) is None:
            accelerator = facts.accelerator.kind if facts.accelerator else "cpu"
            kinds.add((accelerator, facts.architecture.value))
    if kinds:
        c["aws:iam/role:Role"] += 1
        c["aws:iam/rolePolicy:RolePolicy"] += 1
        c["aws:iam/instanceProfile:InstanceProfile"] += 1
        c["aws:ec2/securityGroup:SecurityGroup"] += 1
        c[T_EGRESS] += 1
        c["aws:s3/bucketObjectv2:BucketObjectv2"] += 1 + 2 * len(kinds)
        c["aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration"] = len(
            {arch for _, arch in kinds}
        )
        for kind in ("component:Component", "imageRecipe:ImageRecipe", "image:Image"):
            c[f"aws:imagebuilder/{kind}"] = len(kinds)
        # Per image: its build log group and the distribution that tags its AMI.
        c["aws:imagebuilder/distributionConfiguration:DistributionConfiguration"] = len(kinds)
        c["aws:cloudwatch/logGroup:LogGroup"] += len(kinds)
        # The AMI's root snapshot gets the AMI's tags, one ec2.Tag each: the definition's
        # tags, the cluster, the role, the name and the image key.
        c["aws:ec2/tag:Tag"] = len(kinds) * (len(set(spec.tags) - {"Name"}) + 4)
    return c


def test_resource_types_and_counts(example_run: Example) -> None:
    _, plan, result = example_run
    from slurmstack import render

    # Every distinct rendered file, plus the manifest that lists them and the record of the
    # deployment (slurmstack.stack.deployed).
    objects = len(render.config_store(plan).objects) + 2
    assert result.count_by_type() == expected_counts(plan, objects)


def test_one_launch_template_group_and_placement_group_per_pool(example_run: Example) -> None:
    _, plan, result = example_run
    for pool in plan.pools:
        name = f"{plan.name}-pool-{pool.name}"
        lt = result.one(T_LT, name)
        asg = result.one(T_ASG, name)
        assert lt.inputs["name"] == name and asg.inputs["name"] == name
        assert asg.inputs["minSize"] == asg.inputs["maxSize"] == asg.inputs["desiredCapacity"]
        assert asg.inputs["desiredCapacity"] == pool.count
        assert asg.inputs["healthCheckType"] == "EC2"
        assert asg.inputs["waitForCapacityTimeout"] == "0"
        # The template's latest_version: the group's own, or (spot) its mixed instances policy's.
        if pool.capacity.type is CapacityType.SPOT:
            policy = asg.inputs["mixedInstancesPolicy"]
            spec = policy["launchTemplate"]["launchTemplateSpecification"]
            assert spec["version"] == "1" and "launchTemplate" not in asg.inputs
        else:
            assert asg.inputs["launchTemplate"]["version"] == "1"
        assert asg.inputs["capacityRebalance"] is (pool.capacity.type is CapacityType.SPOT)
        placement_groups = [r for r in result.of_type(T_PG) if r.name == name]
        assert len(placement_groups) == (1 if pool.placement_group else 0)
        if pool.placement_group:
            assert placement_groups[0].inputs["strategy"] == "cluster"
            assert lt.inputs["placement"]["groupName"] == name
        else:
            assert "placement" not in lt.inputs
        # The group's instances carry the pool's tags.
        asg_tags = {t["key"]: t["value"] for t in asg.inputs["tags"]}
        assert asg_tags[POOL_TAG] == pool.name and asg_tags[ROLE_TAG] == "pool"
        assert all(t["propagateAtLaunch"] for t in asg.inputs["tags"])


def test_capacity_options_per_pool(example_run: Example) -> None:
    _, plan, result = example_run
    for pool in plan.pools:
        lt = result.one(T_LT, f"{plan.name}-pool-{pool.name}").inputs
        kind = pool.capacity.type
        market = lt.get("instanceMarketOptions")
        reservation = lt.get("capacityReservationSpecification")
        if kind is CapacityType.SPOT:
            # The group asks for Spot (its mixed instances policy), the elastic nodes' fleet
            # too: the template says nothing that could contradict either.
            assert market is None and reservation is None
            asg = result.one(T_ASG, f"{plan.name}-pool-{pool.name}").inputs
            spot = asg["mixedInstancesPolicy"]["instancesDistribution"]
            assert spot["onDemandBaseCapacity"] == 0
            assert spot["onDemandPercentageAboveBaseCapacity"] == 0
            assert spot["spotAllocationStrategy"] == "price-capacity-optimized"
            price = pool.capacity.max_spot_price
            assert spot.get("spotMaxPrice") == (f"{price:g}" if price else None)
        elif kind is CapacityType.CAPACITY_BLOCK:
            assert market == {"marketType": "capacity-block"}
            target = reservation["capacityReservationTarget"]
            assert target["capacityReservationId"] == pool.capacity.reservation_id
        elif kind is CapacityType.CAPACITY_RESERVATION:
            assert market is None
            target = reservation["capacityReservationTarget"]
            assert target["capacityReservationId"] == pool.capacity.reservation_id
        else:
            assert market is None and reservation is None


def test_urns_are_unique(example_run: Example) -> None:
    _, _, result = example_run
    urns = [r.urn for r in result.resources]
    assert len(set(urns)) == len(urns) == result.new_resource_calls


def test_imdsv2_required_everywhere(example_run: Example) -> None:
    _, _, result = example_run
    for resource in result.of_type(T_INSTANCE) + result.of_type(T_LT):
        options = resource.inputs["metadataOptions"]
        assert options["httpTokens"] == "required", resource.name
        assert options["httpEndpoint"] == "enabled"
    # Hop limit 1 on every node: a bridged container's token reply dies on the extra hop
    # (behind the nftables forward drop; enroot containers share the host's namespace).
    for resource in result.of_type(T_INSTANCE) + result.of_type(T_LT):
        assert resource.inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1, resource.name


def test_encryption_everywhere(example_run: Example) -> None:
    _, _, result = example_run
    (head,) = result.of_type(T_INSTANCE)
    root = head.inputs["rootBlockDevice"]
    assert root["encrypted"] is True and root["volumeType"] == "gp3"
    for lt in result.of_type(T_LT):
        mappings = lt.inputs["blockDeviceMappings"]
        assert mappings and all(m["ebs"]["encrypted"] == "true" for m in mappings), lt.name
    for volume in result.of_type(T_VOLUME):
        assert volume.inputs["encrypted"] is True and volume.inputs["type"] == "gp3"
    for fs in result.of_type(T_EFS):
        assert fs.inputs["encrypted"] is True
    buckets = {b.id for b in result.of_type(T_BUCKET)}
    encrypted = {
        sse.inputs["bucket"]
        for sse in result.of_type(T_SSE)
        if sse.inputs["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"]
        in ("AES256", "aws:kms")
    }
    assert buckets and buckets == encrypted
    # FSx for Lustre encrypts every deployment type at rest; there is no switch to check.
    for fs in result.of_type(T_LUSTRE):
        assert fs.inputs["deploymentType"] in {
            "SCRATCH_1",
            "SCRATCH_2",
            "PERSISTENT_1",
            "PERSISTENT_2",
        }


def test_no_ingress_from_the_internet_unless_ssh_cidrs(example_run: Example) -> None:
    _, plan, result = example_run
    ssh_cidrs = {str(c) for c in plan.spec.network.ssh_cidrs}
    seen_ssh = set()
    for rule in result.of_type(T_INGRESS):
        cidr = rule.inputs.get("cidrIpv4") or rule.inputs.get("cidrIpv6")
        if cidr is None:
            assert rule.inputs.get("referencedSecurityGroupId"), rule.name
            continue
        assert cidr in ssh_cidrs, f"{rule.name} opens {cidr}"
        assert (rule.inputs["ipProtocol"], rule.inputs["fromPort"], rule.inputs["toPort"]) == (
            "tcp",
            22,
            22,
        )
        assert ipaddress.ip_network(cidr).prefixlen > 0
        seen_ssh.add(cidr)
    assert seen_ssh == ssh_cidrs
    # A public address only with ssh_cidrs: an Elastic IP on the head's own interface.
    interface = result.one("aws:ec2/networkInterface:NetworkInterface", f"{plan.name}-head")
    public = [r for r in result.of_type("aws:ec2/eip:Eip") if r.name == f"{plan.name}-head-public"]
    assert [r.inputs["networkInterface"] for r in public] == ([interface.id] if ssh_cidrs else [])
    (head,) = result.of_type(T_INSTANCE)
    assert "associatePublicIpAddress" not in head.inputs


def test_workers_allow_all_traffic_within_their_group(example_run: Example) -> None:
    _, plan, result = example_run
    workers = result.one("aws:ec2/securityGroup:SecurityGroup", f"{plan.name}-workers")
    for kind in (T_INGRESS, T_EGRESS):
        self_rules = [
            r
            for r in result.of_type(kind)
            if r.inputs["securityGroupId"] == workers.id
            and r.inputs.get("referencedSecurityGroupId") == workers.id
        ]
        assert len(self_rules) == 1 and self_rules[0].inputs["ipProtocol"] == "-1", kind


def test_tags_on_everything_taggable(example_run: Example) -> None:
    definition, plan, result = example_run
    user_tags = definition.get("tags", {})
    for resource in result.custom:
        if resource.type in UNTAGGABLE:
            continue
        tags = resource.inputs.get("tags")
        assert tags, f"{resource.type} {resource.name} has no tags"
        assert tags[CLUSTER_TAG] == plan.name
        assert tags[ROLE_TAG], resource.name
        if resource.type != "aws:s3/bucketObjectv2:BucketObjectv2":  # 10-tag S3 object limit
            for key, value in user_tags.items():
                assert tags.get(key) == value, (resource.name, key)


def test_resource_names_are_deterministic(example_run: Example) -> None:
    _, plan, result = example_run
    for resource in result.resources:
        assert resource.name == plan.name or resource.name.startswith(f"{plan.name}-"), (
            resource.name
        )


def test_stateful_resources_protected(example_run: Example) -> None:
    _, plan, result = example_run
    protect = plan.spec.storage.protect
    stateful = result.of_type(T_BUCKET) + result.of_type(T_LUSTRE) + result.of_type(T_EFS)
    stateful += result.of_type(T_VOLUME)
    assert stateful
    for resource in stateful:
        assert resource.options.protect is protect, resource.name
    retained = {T_BUCKET, T_EFS, T_VOLUME}
    for resource in stateful:
        assert resource.options.retain_on_delete is (protect and resource.type in retained)
    (bucket,) = result.of_type(T_BUCKET)
    assert bucket.inputs["forceDestroy"] is (not protect)


def test_ec2_gets_the_rendered_documents_gzip_compressed(example_run: Example) -> None:
    """The head and each launch template carry their role's cloud-init document as rendered
    (and as `slurmstack render` writes it), gzip-compressed within EC2's limit."""
    _, plan, result = example_run
    raw = user_data_bytes(result)
    roles = {f"{plan.name}-head": "head"} | {
        f"{plan.name}-pool-{p.name}": p.name for p in plan.pools
    }
    assert set(raw) == set(roles)
    for name, role in roles.items():
        assert raw[name][:2] == b"\x1f\x8b", name  # gzip's magic: cloud-init decompresses it
        assert raw[name] == ec2_user_data(plan, role)
        assert len(raw[name]) <= USER_DATA_LIMIT
        assert gzip.decompress(raw[name]).decode() == user_data(plan, role)


def test_munge_key_never_in_plain_text(example_run: Example) -> None:
    _, _, result = example_run
    (key,) = result.of_type(T_RANDOM)
    secrets = [key.outputs["base64"], key.outputs["hex"]]
    assert all(len(s) > 1000 for s in secrets)
    # Not in user data.
    for name, text in user_data_texts(result).items():
        for secret in secrets:
            assert secret not in text, name
    # Not in stack outputs, not in any input of any resource other than the secret version,
    # where it is marked secret (encrypted in Pulumi's state).
    assert not any(s in json.dumps(result.outputs) for s in secrets)
    for resource in result.resources:
        if resource.type == T_SECRET_VERSION and "secretBinary" in resource.inputs:
            assert "secretBinary" in resource.secret_inputs
            assert resource.inputs["secretBinary"] == key.outputs["base64"]
            continue
        text = json.dumps(resource.inputs)
        assert not any(s in text for s in secrets), resource.name
    assert "base64" in key.options.additional_secret_outputs


def test_accounting_password_never_in_plain_text(example_run: Example) -> None:
    """As the munge key: generated by the stack, only in its secret version (marked secret),
    read by the head node from Secrets Manager at boot."""
    _, plan, result = example_run
    (password,) = result.of_type(T_PASSWORD)
    value = password.outputs["result"]
    assert len(value) == 32 and value.isalnum()
    assert password.inputs["special"] is False
    for name, text in user_data_texts(result).items():
        assert value not in text, name
    assert value not in json.dumps(result.outputs)
    versions = [r for r in result.of_type(T_SECRET_VERSION) if "secretString" in r.inputs]
    assert len(versions) == 1
    (version,) = versions
    assert version.inputs["secretString"] == value and "secretString" in version.secret_inputs
    assert "secretString" in version.options.additional_secret_outputs
    for resource in result.resources:
        if resource is not version and resource is not password:
            assert value not in json.dumps(resource.inputs), resource.name
    # The secret is the one the head's agent reads (accounting.json names it).
    secret = result.one(T_SECRET, f"{plan.name}-accounting-db-password")
    assert secret.inputs["name"] == f"slurmstack/{plan.name}/accounting-db-password"
    assert result.outputs["accounting_password_secret"] == secret.inputs["name"]


def test_head_node_and_pools_do_not_wait_for_storage(example_run: Example) -> None:
    """The critical path: nothing the instances are built from depends on Lustre or EFS."""
    _, _, result = example_run
    slow = {r.urn for r in result.of_type(T_LUSTRE) + result.of_type(T_EFS) + result.of_type(T_DRA)}
    slow |= {r.urn for r in result.of_type(T_MOUNT_TARGET)}

    def closure(urn: str, seen: set[str]) -> set[str]:
        for dep in result.by_urn(urn).options.dependencies:
            if dep not in seen:
                seen.add(dep)
                closure(dep, seen)
        return seen

    for resource in result.of_type(T_INSTANCE) + result.of_type(T_LT) + result.of_type(T_ASG):
        assert not closure(resource.urn, set()) & slow, resource.name


def test_outputs(example_run: Example) -> None:
    _, plan, result = example_run
    out = result.outputs
    head = result.one(T_INSTANCE)
    assert out["head_node_id"] == head.id and head.id.startswith("i-")
    assert out["head_private_ip"] == head.outputs["privateIp"]
    assert out["ssm_session_command"] == (
        f"aws ssm start-session --region {plan.region} --target {head.id}"
    )
    assert out["bucket_name"] == result.one(T_BUCKET).id
    assert out["pools"] == {
        p.name: {
            "asg_name": f"{plan.name}-pool-{p.name}",
            "count": p.count,
            "max_count": p.max_count,
            "instance_type": p.instance_type,
        }
        for p in plan.pools
    }
    if plan.lustre is not None:
        fs = result.one(T_LUSTRE)
        assert out["lustre_dns_name"] == fs.outputs["dnsName"]
        assert out["lustre_dns_name"].endswith(f".fsx.{plan.region}.amazonaws.com")
        assert out["lustre_mount_name"] == fs.outputs["mountName"]
    else:
        assert "lustre_dns_name" not in out
    if plan.spec.storage.home is not None:
        assert out["efs_id"] == result.one(T_EFS).id
    assert not result.secret_outputs


def test_deploy_parameters(example_run: Example) -> None:
    _, plan, result = example_run
    params = {r.inputs["name"]: r for r in result.of_type(T_PARAM)}
    prefix = plan.parameter_prefix
    head = result.one(T_INSTANCE)
    assert params[f"{prefix}/head/address"].inputs["value"] == head.outputs["privateIp"]
    assert params[f"{prefix}/head/state-volume-id"].inputs["value"] == result.one(T_VOLUME).id
    assert params[f"{prefix}/bucket/name"].inputs["value"] == result.one(T_BUCKET).id
    if plan.lustre is not None:
        fs = result.one(T_LUSTRE)
        assert params[f"{prefix}/lustre/dns-name"].inputs["value"] == fs.outputs["dnsName"]
        assert params[f"{prefix}/lustre/mount-name"].inputs["value"] == fs.outputs["mountName"]
    for param in params.values():
        assert param.inputs["type"] == "String"  # none of them is secret
