"""Bring your own data, under Pulumi's mocks (preview=False): file systems of yours are read
and checked, never managed; several data repository associations; node roles scoped to exactly
the buckets and prefixes mounted with Mountpoint for S3; the bucket-policy pieces."""

from __future__ import annotations

import copy
import json
from typing import Any

import parliament
import pytest

from slurmstack.offline import run_definition
from slurmstack.offline.existing import World
from slurmstack.offline.standins import ACCOUNT_ID
from slurmstack.render.node import node_config
from slurmstack.stack.data_policies import association_bucket_policy, mountpoint_bucket_policy
from stack.iam_eval import decide
from support.stack import (
    T_DRA,
    T_EFS,
    T_ENI,
    T_LT,
    T_LUSTRE,
    T_MOUNT_TARGET,
    T_OBJECT,
    T_PARAM,
    T_ROLE_POLICY,
    plan_of,
    run,
    run_ok,
    small_cluster,
)

pytestmark = pytest.mark.stack

LUSTRE_ID, EFS_ID, ZFS_ID = "fs-0123456789abcdef0", "fs-0a1b2c3d", "fs-0fedcba9876543210"
CLIENT_GROUP = "sg-0c0c0c0c0c0c0c0c0"
VPC = {
    "vpc_id": "vpc-0123456789abcdef0",
    "compute_subnet_id": "subnet-0123456789abcdef0",
    "compute_subnet_cidr": "10.1.0.0/20",
}
FS_TYPES = {
    T_LUSTRE,
    T_EFS,
    T_MOUNT_TARGET,
    "aws:fsx/openZfsFileSystem:OpenZfsFileSystem",
    "aws:fsx/openZfsVolume:OpenZfsVolume",
}


def byo() -> dict[str, Any]:
    """A cluster on your VPC with your Lustre, your EFS as /home, your OpenZFS volume, the
    stack's own Lustre with three associations, and two Mountpoint mounts."""
    d = small_cluster(local_scratch="/scratch")
    d["network"] = dict(VPC)
    d["storage"] = {
        "lustre": {
            "capacity_gib": 2400,
            "deployment": "PERSISTENT_2",
            "throughput_per_tib": 250,
            "s3_import_export": "datasets/",
            "associations": [
                {"path": "/checkpoints", "prefix": "checkpoints/", "import_events": []},
                {
                    "path": "/imagenet",
                    "bucket": "team-datasets",
                    "prefix": "imagenet/",
                    "export_events": [],
                    "batch_import": False,
                },
            ],
        },
        "home": {"type": "efs", "file_system_id": EFS_ID},
        "existing": [
            {
                "type": "lustre",
                "file_system_id": LUSTRE_ID,
                "mount": "/shared-lustre",
                "client_security_group_id": CLIENT_GROUP,
            },
            {
                "type": "openzfs",
                "file_system_id": ZFS_ID,
                "mount": "/zfs",
                "export_path": "/fsx/projects",
            },
        ],
        "s3_mounts": [
            {"mount": "/s3/text", "bucket": "team-datasets", "prefix": "text/"},
            {"mount": "/s3/export", "prefix": "exports/", "read_only": False},
        ],
    }
    return d


@pytest.fixture(scope="module")
def result() -> Any:
    return run_ok(byo())


def test_file_systems_of_yours_are_read_never_registered(result: Any) -> None:
    """Existing file systems are never created, modified or deleted: the program reads the two
    FSx ones with get (a read is outside Pulumi's create/update/delete), looks EFS up with a
    data source, and registers no file system, volume or mount target at all (the stack's own
    Lustre aside), nor any resource that names one of yours except the parameters it publishes."""
    ours = [r for r in result.custom if r.type in FS_TYPES]
    assert [r.type for r in ours] == [T_LUSTRE]  # the stack's own, made from capacity_gib
    assert ours[0].inputs["storageCapacity"] == 2400
    assert sorted((t, i) for t, _, i in result.reads) == [
        ("aws:fsx/lustreFileSystem:LustreFileSystem", LUSTRE_ID),
        ("aws:fsx/openZfsFileSystem:OpenZfsFileSystem", ZFS_ID),
    ]
    tokens = [token for token, _ in result.invokes]
    assert "aws:efs/getFileSystem:getFileSystem" in tokens
    naming = [
        r
        for r in result.custom
        if any(fid in json.dumps(r.inputs) for fid in (LUSTRE_ID, EFS_ID, ZFS_ID))
    ]
    # The parameters the nodes read, the roles' EFS fallback, the config store's node.json.
    assert {r.type for r in naming} <= {T_PARAM, T_ROLE_POLICY, T_OBJECT}, {r.type for r in naming}
    # The stack makes no EFS for /home: it is yours.
    assert not result.of_type(T_EFS) and "efs_id" not in result.outputs
    assert len({r.urn for r in result.resources}) == result.new_resource_calls


def test_what_the_lookups_found_reaches_the_nodes_as_parameters(result: Any) -> None:
    # The head's AMI parameter holds insecureValue (an AMI id is no secret), not value.
    params = {r.inputs["name"]: r.inputs.get("value") for r in result.of_type(T_PARAM)}
    prefix = "/slurmstack/tiny/storage"
    assert params[f"{prefix}/{LUSTRE_ID}/dns-name"] == f"{LUSTRE_ID}.fsx.us-east-1.amazonaws.com"
    assert len(params[f"{prefix}/{LUSTRE_ID}/mount-name"]) == 8
    assert params[f"{prefix}/{ZFS_ID}/dns-name"] == f"{ZFS_ID}.fsx.us-east-1.amazonaws.com"
    assert not [n for n in params if EFS_ID in n]  # efs-utils needs only the id, in node.json
    assert (
        result.outputs["existing_file_systems"][EFS_ID] == f"{EFS_ID}.efs.us-east-1.amazonaws.com"
    )


def test_node_json_names_each_file_system_of_yours() -> None:
    plan = plan_of(byo())
    mounts = {m.path: m for m in node_config(plan, plan.pools[0]).mounts}
    assert (mounts["/home"].kind.value, mounts["/home"].file_system_id) == ("efs", EFS_ID)
    assert mounts["/shared-lustre"].file_system_id == LUSTRE_ID
    assert (mounts["/zfs"].kind.value, mounts["/zfs"].export_path) == ("openzfs", "/fsx/projects")
    assert mounts["/fsx"].file_system_id == ""  # the stack's own


def test_client_group_joins_every_node(result: Any) -> None:
    head = result.one(T_ENI)
    assert CLIENT_GROUP in head.inputs["securityGroups"]
    for template in result.of_type(T_LT):
        for interface in template.inputs["networkInterfaces"]:
            assert CLIENT_GROUP in interface["securityGroups"]


@pytest.mark.parametrize(
    ("world", "message"),
    [
        (World(admitted_cidr=None), "from the cluster's nodes (subnets 10.1.0.0/20"),
        (World(admitted_cidr="192.168.0.0/16"), "add an inbound rule for TCP "),
        (World(vpc_of={LUSTRE_ID: "vpc-0999999999999999a"}), "deploy the cluster into"),
        (World(no_mount_target=frozenset({EFS_ID})), "no network interface in the cluster's zone"),
    ],
    ids=["no-rule", "other-cidr", "other-vpc", "no-mount-target"],
)
def test_an_unreachable_file_system_stops_the_deployment(world: World, message: str) -> None:
    """The groups guarding a file system of yours are read and checked; the failure names the
    file system, its groups, the cluster's subnet and the rule to add."""
    full = World(
        **{
            **World().__dict__,
            "vpc_id": VPC["vpc_id"],
            "subnet_cidrs": {VPC["compute_subnet_id"]: "10.1.0.0/20"},
            **{k: v for k, v in world.__dict__.items() if v != getattr(World(), k)},
        }
    )
    failed = run_definition(byo(), world=full)
    assert failed.error is not None
    assert message in str(failed.error), str(failed.error)
    assert "storage." in str(failed.error)  # the definition's path of the file system


def test_a_rule_from_the_client_group_is_enough() -> None:
    """A group of yours that the file system admits stands in for the subnet."""
    from slurmstack.contract import MountKind
    from slurmstack.stack.reachability import FileSystemNetwork, IngressRule, reachability_problems

    rule = IngressRule("sg-fs", "tcp", 988, 1023, referenced_group=CLIENT_GROUP)
    network = FileSystemNetwork(LUSTRE_ID, MountKind.LUSTRE, "vpc-1", ("sg-fs",), (rule,))
    ask = {"vpc_id": "vpc-1", "subnet_cidrs": ("10.1.0.0/20",), "definition_path": "x"}
    assert reachability_problems(network, node_groups={CLIENT_GROUP: "yours"}, **ask) == []
    refused = reachability_problems(network, node_groups={}, **ask)
    assert len(refused) == 2 and "TCP 988" in refused[0] and "TCP 1018-1023" in refused[1]
    nfs = FileSystemNetwork(
        EFS_ID,
        MountKind.EFS,
        "vpc-1",
        ("sg-fs",),
        (IngressRule("sg-fs", "-1", -1, -1, cidr="10.0.0.0/8"),),
    )
    assert reachability_problems(nfs, node_groups={}, **ask) == []


def test_several_associations_each_with_its_own_path_and_policies(result: Any) -> None:
    associations = {r.inputs["fileSystemPath"]: r for r in result.of_type(T_DRA)}
    assert sorted(associations) == ["/checkpoints", "/datasets", "/imagenet"]
    bucket = result.outputs["bucket_name"]
    datasets = associations["/datasets"]
    assert datasets.name == "tiny-lustre-dra"  # s3_import_export's keeps its name
    assert datasets.inputs["dataRepositoryPath"] == f"s3://{bucket}/datasets/"
    assert set(datasets.inputs["s3"]) == {"autoImportPolicy", "autoExportPolicy"}
    checkpoints = associations["/checkpoints"]
    assert checkpoints.inputs["dataRepositoryPath"] == f"s3://{bucket}/checkpoints/"
    assert set(checkpoints.inputs["s3"]) == {"autoExportPolicy"}  # export only
    imagenet = associations["/imagenet"]
    assert imagenet.inputs["dataRepositoryPath"] == "s3://team-datasets/imagenet/"
    assert set(imagenet.inputs["s3"]) == {"autoImportPolicy"}
    assert imagenet.inputs["batchImportMetaDataOnCreate"] is False
    for association in associations.values():
        assert association.inputs["deleteDataInFilesystem"] is False
    # FSx takes one association request at a time: each waits for the one before.
    chain = [associations[p] for p in ("/datasets", "/checkpoints", "/imagenet")]
    assert chain[0].options.depends_on == ()
    assert chain[1].options.depends_on == (chain[0].urn,)
    assert chain[2].options.depends_on == (chain[1].urn,)


def _node_policies(result: Any) -> dict[str, dict[str, Any]]:
    return {r.name: json.loads(r.inputs["policy"]) for r in result.of_type(T_ROLE_POLICY)}


def test_node_roles_reach_exactly_the_mounted_buckets_and_prefixes(result: Any) -> None:
    cluster_bucket = f"arn:aws:s3:::{result.outputs['bucket_name']}"
    team = "arn:aws:s3:::team-datasets"
    nodes = {n: p for n, p in _node_policies(result).items() if "image" not in n}
    assert len(nodes) == 2  # the head's and the pool's
    for name, policy in nodes.items():

        def ask(action: str, resource: str, prefix: str | None = None, policy: Any = policy) -> str:
            context = {} if prefix is None else {"s3:prefix": prefix}
            return decide([policy], action, resource, context)

        # The read-only dataset: its prefix, read and listed, nothing else of that bucket.
        assert ask("s3:GetObject", f"{team}/text/shard-0001.tar") == "allow", name
        assert ask("s3:ListBucket", team, "text/") == "allow", name
        assert ask("s3:ListBucket", team, "text/sub/") == "allow", name
        assert ask("s3:ListBucket", team, "imagenet/") != "allow", name
        assert ask("s3:GetObject", f"{team}/imagenet/x.jpg") != "allow", name
        assert ask("s3:PutObject", f"{team}/text/new") != "allow", name
        # The checkpoint export: new objects under exports/ only, and no deletes.
        assert ask("s3:PutObject", f"{cluster_bucket}/exports/step-100.pt") == "allow", name
        assert ask("s3:AbortMultipartUpload", f"{cluster_bucket}/exports/x") == "allow", name
        assert ask("s3:DeleteObject", f"{cluster_bucket}/exports/x") != "allow", name
        assert ask("s3:PutObject", f"{cluster_bucket}/config/x") == "deny", name
        assert ask("s3:PutObject", f"{cluster_bucket}/datasets/x") != "allow", name
        # No other bucket at all.
        assert ask("s3:GetObject", "arn:aws:s3:::someone-else/text/x") != "allow", name


def test_mountpoint_and_association_statements_lint_clean() -> None:
    plan = plan_of(byo())
    from slurmstack.stack.data_policies import mountpoint_statements

    document = {"Version": "2012-10-17", "Statement": mountpoint_statements(plan, "arn:aws:s3:::b")}
    policy = parliament.analyze_policy_string(json.dumps(document), include_community_auditors=True)
    assert [(f.issue, f.detail) for f in policy.findings] == []


def test_bucket_policy_pieces_for_buckets_in_another_account() -> None:
    """What the owner of another account's bucket adds: the node roles for a Mountpoint mount,
    FSx's service-linked role of this file system for an association, on the prefix only."""
    plan = plan_of(byo())
    roles = [
        f"arn:aws:iam::{ACCOUNT_ID}:role/tiny-head",
        f"arn:aws:iam::{ACCOUNT_ID}:role/tiny-pool-gpu",
    ]
    mount = mountpoint_bucket_policy(plan, plan.s3_mounts[0], roles)
    objects = mount["Statement"][1]
    assert objects["Resource"] == ["arn:aws:s3:::team-datasets/text/*"]
    assert objects["Action"] == ["s3:GetObject"] and objects["Principal"]["AWS"] == sorted(roles)
    link = association_bucket_policy(plan, plan.associations[2], ACCOUNT_ID, "fs-0abc")
    principal = link["Statement"][0]["Principal"]["AWS"][0]
    assert principal.endswith("/AWSServiceRoleForFSxS3Access_fs-0abc")
    assert "s3:PutBucketNotification" in link["Statement"][0]["Action"]  # automatic import
    assert link["Statement"][1]["Resource"] == ["arn:aws:s3:::team-datasets/imagenet/*"]
    for document in (mount, link):
        policy = parliament.analyze_policy_string(json.dumps(document))
        assert [f.issue for f in policy.findings] == []


def test_data_stack_is_deterministic() -> None:
    first = run(byo())
    second = run_definition(copy.deepcopy(byo()))
    assert [r.urn for r in first.resources] == [r.urn for r in second.resources]


def test_login_nodes_mount_what_every_node_mounts() -> None:
    """Login nodes take your file systems by id and the Mountpoint buckets (no cache: no
    scratch), in their s3-mounts step, and their role reaches the mounted prefixes."""
    from slurmstack.render.cloud_init import user_data
    from slurmstack.render.people import login_node_config
    from slurmstack.stack.policies import login_policy

    definition = byo()
    definition["login_pools"] = [{"name": "login", "instance_type": "m7i.xlarge", "count": 1}]
    plan = plan_of(definition)
    (pool,) = plan.login_pools
    config = login_node_config(plan, pool)
    mounts = {m.path: m for m in config.mounts}
    assert mounts["/home"].file_system_id == EFS_ID
    assert mounts["/zfs"].export_path == "/fsx/projects"
    assert all(m.kind.value != "mountpoint-s3" for m in config.mounts)
    assert [m.path for m in config.s3_mounts] == [m.mount for m in plan.s3_mounts]
    assert all(m.cache_dir == "" for m in config.s3_mounts)
    assert "s3-mounts" in user_data(plan, pool.role)
    policy = login_policy(
        plan, pool, account=ACCOUNT_ID, bucket_arn="arn:aws:s3:::b", secret_arn="arn:s"
    )
    reads = [s for s in policy["Statement"] if "s3:GetObject" in s.get("Action", [])]
    assert any("team-datasets" in str(s["Resource"]) for s in reads), reads
