"""One realistic change of every field of the definition, and the class `plan --against`
must give it (tests/stack/test_change_classes.py runs them; tests/unit/change checks that
every field of the schema has one).

Each entry: the field's path (list items as ``pools``), the change, the expected class, and
whether it is an ordinary operation (one that must never replace a group, a file system or
the state volume). A change may start from a variant of the base (``setup``), applied to
both sides, where the field only means something there (an external database's host).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Definition = dict[str, Any]

BASE: Definition = {
    "name": "chg",
    "region": "us-east-1",
    "availability_zone": "us-east-1a",
    "head_node": {"instance_type": "m7i.xlarge"},
    "pools": [
        {"name": "gpu", "instance_type": "p5.48xlarge", "count": 2},
        {"name": "cpu", "instance_type": "c7i.2xlarge", "count": 2},
    ],
    "storage": {
        "lustre": {"capacity_gib": 4800, "deployment": "PERSISTENT_2", "throughput_per_tib": 250},
        "home": {"type": "efs"},
    },
    "slurm": {
        "accounting": {
            "enabled": True,
            "accounts": [{"name": "research", "users": ["alice"], "qos": ["standard"]}],
            "qos": [{"name": "standard"}],
        }
    },
}


@dataclass(frozen=True)
class Mutation:
    field: str
    change: Callable[[Definition], None]
    expected: str  # an Effect value
    ordinary: bool = True
    setup: Callable[[Definition], None] | None = None
    why: str = ""

    def pair(self) -> tuple[Definition, Definition]:
        before = copy.deepcopy(BASE)
        if self.setup is not None:
            self.setup(before)
        after = copy.deepcopy(before)
        self.change(after)
        return before, after


def _set(path: str, value: Any) -> Callable[[Definition], None]:
    """Set a dotted path (``pools.0.count``), making missing objects on the way."""

    def apply(d: Definition) -> None:
        node: Any = d
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        last = parts[-1]
        if last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value

    return apply


def _both(*steps: Callable[[Definition], None]) -> Callable[[Definition], None]:
    def apply(d: Definition) -> None:
        for step in steps:
            step(d)

    return apply


def _rename_pool(d: Definition) -> None:
    d["pools"][1]["name"] = "cpu2"


def _external_db(d: Definition) -> None:
    d["slurm"]["accounting"]["database"] = {
        "type": "external",
        "host": "db.example.internal",
        "password_secret": "chg/slurmdbd",
    }


def _rds_db(d: Definition) -> None:
    d["slurm"]["accounting"]["database"] = {"type": "rds", "instance_class": "db.t4g.small"}


def _byo_network(d: Definition) -> None:
    d["network"] = {
        "vpc_id": "vpc-0123456789abcdef0",
        "compute_subnet_id": "subnet-0123456789abcdef0",
        "compute_subnet_cidr": "10.7.0.0/20",
    }


# People and login nodes (issue 25): a team of one, then a directory, then login pools.
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEx6x8q0mXjz1rPqjC5d3mJrWjAlC9V5fQ0vYH3f3oKp"
ROLE = "arn:aws:iam::123456789012:role/research-alice"
LOGIN = {"name": "login", "instance_type": "m7i.2xlarge", "count": 2}


def _team(d: Definition) -> None:
    d["groups"] = [{"name": "research", "gid": 3000}, {"name": "gpu-users", "gid": 3001}]
    d["users"] = [{"name": "alice", "uid": 2001, "group": "research"}]
    d["login_pools"] = [dict(LOGIN)]


def _add_bob(d: Definition) -> None:
    d["users"].append({"name": "bob", "uid": 2002, "group": "research"})


def _remove_bob(d: Definition) -> None:
    d["users"] = [u for u in d["users"] if u["name"] != "bob"]


def _directory(d: Definition) -> None:
    d["directory"] = {
        "uris": ["ldaps://ldap.example.internal"],
        "search_base": "dc=example,dc=internal",
        "ca_certificate": CA_PEM,
    }
    d["login_pools"] = [dict(LOGIN)]


def _bound_directory(d: Definition) -> None:
    _directory(d)
    d["directory"]["bind_dn"] = "cn=reader,dc=example,dc=internal"
    d["directory"]["bind_password_secret"] = "chg/ldap-reader"


def _login(d: Definition) -> None:
    d["login_pools"] = [dict(LOGIN)]


def _login_behind_balancer(d: Definition) -> None:
    d["login_pools"] = [{**LOGIN, "ssh_cidrs": ["203.0.113.0/24"], "load_balancer": True}]


# Bring your own data (issue 30): file systems of yours need your VPC; associations hang off the
# stack's Lustre (PERSISTENT_2); Mountpoint mounts are on every node.
YOUR_LUSTRE, YOUR_EFS, YOUR_ZFS = "fs-0123456789abcdef0", "fs-0a1b2c3d", "fs-0fedcba9876543210"
CLIENT_GROUP = "sg-0c0c0c0c0c0c0c0c0"
DATASETS = {"path": "/datasets", "prefix": "datasets/"}
S3_MOUNT = {"mount": "/s3/imagenet", "bucket": "team-datasets", "prefix": "imagenet/"}


def _your_home(d: Definition) -> None:
    _byo_network(d)
    d["storage"]["home"] = {"type": "efs", "file_system_id": YOUR_EFS}


def _your_openzfs_home(d: Definition) -> None:
    _byo_network(d)
    d["storage"]["home"] = {"type": "openzfs", "file_system_id": YOUR_ZFS}


def _your_lustre(d: Definition) -> None:
    _byo_network(d)
    d["storage"]["existing"] = [{"type": "lustre", "file_system_id": YOUR_LUSTRE, "mount": "/team"}]


def _your_openzfs(d: Definition) -> None:
    _byo_network(d)
    d["storage"]["existing"] = [
        {"type": "openzfs", "file_system_id": YOUR_ZFS, "mount": "/team", "export_path": "/fsx"}
    ]


def _association(d: Definition) -> None:
    d["storage"]["lustre"]["associations"] = [dict(DATASETS)]


def _other_bucket_association(d: Definition) -> None:
    d["storage"]["lustre"]["associations"] = [
        {**DATASETS, "bucket": "team-datasets", "import_events": []}
    ]


def _s3_mount(d: Definition) -> None:
    d["storage"]["s3_mounts"] = [dict(S3_MOUNT)]


def _writable_s3_mount(d: Definition) -> None:
    d["storage"]["s3_mounts"] = [{**S3_MOUNT, "read_only": False}]


def _scratch_s3_mount(d: Definition) -> None:
    # The gpu pool caches on its NVMe scratch; the cpu pool (c7i, no NVMe) does not.
    d["pools"][0]["local_scratch"] = "/scratch"
    d["storage"]["s3_mounts"] = [{**S3_MOUNT, "cache": "auto"}]


# Facts of an instance type outside the catalog (instance_facts).
FACTS = {"vcpus": 4, "cores": 2, "threads_per_core": 2, "memory_mib": 16384, "network_gbps": 12.5}

NONE, LIVE, ROLLING, HEAD, DISRUPTIVE = "none", "live", "rolling", "head-restart", "disruptive"

MUTATIONS: list[Mutation] = [
    # A new identity, place or network is a new cluster: never an ordinary change.
    Mutation("name", _set("name", "chg2"), DISRUPTIVE, False),
    Mutation(
        "region",
        _both(_set("region", "us-west-2"), _set("availability_zone", "us-west-2a")),
        DISRUPTIVE,
        False,
    ),
    Mutation("availability_zone", _set("availability_zone", "us-east-1b"), DISRUPTIVE, False),
    Mutation("network.vpc_cidr", _set("network.vpc_cidr", "10.9.0.0/16"), DISRUPTIVE, False),
    Mutation(
        "network.compute_subnet_prefix",
        _set("network.compute_subnet_prefix", 20),
        DISRUPTIVE,
        False,
    ),
    Mutation("network.vpc_id", _byo_network, DISRUPTIVE, False),
    Mutation(
        "network.compute_subnet_id",
        _set("network.compute_subnet_id", "subnet-0fedcba9876543210"),
        DISRUPTIVE,
        False,
        setup=_byo_network,
    ),
    Mutation(
        "network.compute_subnet_cidr",
        _set("network.compute_subnet_cidr", "10.7.16.0/20"),
        NONE,
        setup=_byo_network,
    ),
    Mutation(
        "network.public_subnet_id",
        _both(
            _set("network.public_subnet_id", "subnet-0aaaaaaaaaaaaaaaa"),
            _set("network.ssh_cidrs", ["192.0.2.0/24"]),
        ),
        HEAD,
        setup=_byo_network,
    ),
    Mutation("network.ssh_cidrs", _set("network.ssh_cidrs", ["192.0.2.0/24"]), HEAD),
    Mutation("head_node.instance_type", _set("head_node.instance_type", "m7i.2xlarge"), HEAD),
    Mutation("head_node.ami", _set("head_node.ami", "ami-0123456789abcdef0"), NONE),
    Mutation("head_node.root_volume.size_gib", _set("head_node.root_volume.size_gib", 300), LIVE),
    Mutation("head_node.root_volume.iops", _set("head_node.root_volume.iops", 6000), LIVE),
    Mutation(
        "head_node.root_volume.throughput_mibps",
        _set("head_node.root_volume.throughput_mibps", 500),
        LIVE,
    ),
    Mutation("head_node.state_volume_gib", _set("head_node.state_volume_gib", 200), LIVE),
    # The two recovery alarms go and EC2's own recovery is turned off, in place.
    Mutation("head_node.auto_recovery", _set("head_node.auto_recovery", False), LIVE),
    # Slurm's state moves from the head's EBS volume to EFS, and nothing copies it: the volume
    # leaves the stack (kept in AWS when storage.protect), and with it the queue's records.
    Mutation(
        "head_node.backup",
        _set("head_node.backup", True),
        DISRUPTIVE,
        False,
        setup=_rds_db,
        why="the state volume leaves the stack: Slurm's state is not carried over to EFS",
    ),
    Mutation(
        "head_node.instance_facts",
        _both(
            _set("head_node.instance_type", "m9x.large"),
            _set("head_node.instance_facts", FACTS),
        ),
        HEAD,
    ),
    Mutation("pools.name", _rename_pool, DISRUPTIVE, False, why="a renamed pool is a new pool"),
    Mutation("pools.instance_type", _set("pools.1.instance_type", "c7i.4xlarge"), ROLLING),
    Mutation("pools.count", _set("pools.0.count", 4), LIVE),
    # An elastic pool's max_count: live. Making a pool elastic the first time is not: its launch
    # template turns on instance tags in the metadata (an elastic node reads its launch's id
    # there), a new version its group rolls out (docs/elastic-pools.md).
    Mutation(
        "pools.max_count", _set("pools.0.max_count", 8), LIVE, setup=_set("pools.0.max_count", 6)
    ),
    Mutation(
        "pools.scale_down_idle_minutes",
        _set("pools.0.scale_down_idle_minutes", 30),
        LIVE,
        setup=_set("pools.0.max_count", 8),
    ),
    Mutation("pools.capacity.type", _set("pools.1.capacity", {"type": "spot"}), ROLLING),
    Mutation(
        "pools.capacity.reservation_id",
        _set(
            "pools.0.capacity",
            {"type": "capacity_reservation", "reservation_id": "cr-0123456789abcdef1"},
        ),
        ROLLING,
        setup=_set(
            "pools.0.capacity",
            {"type": "capacity_reservation", "reservation_id": "cr-0123456789abcdef0"},
        ),
    ),
    Mutation(
        "pools.capacity.max_spot_price",
        _set("pools.1.capacity.max_spot_price", 0.5),
        ROLLING,
        setup=_set("pools.1.capacity", {"type": "spot"}),
    ),
    Mutation("pools.efa", _set("pools.0.efa", False), ROLLING),
    Mutation("pools.placement_group", _set("pools.0.placement_group", False), ROLLING),
    Mutation(
        "pools.topology",
        _set("pools.0.topology", "off"),
        LIVE,
        why="the only placed pool off: TopologyPlugin and topology.conf go, the nodes pull "
        "their new slurmd --conf, Slurm reconfigures",
    ),
    Mutation("pools.local_scratch", _set("pools.0.local_scratch", "/nvme"), ROLLING),
    Mutation("pools.ami", _set("pools.1.ami", "ami-0123456789abcdef0"), ROLLING),
    Mutation(
        "pools.slurm_version",
        _set("pools.1.slurm_version", "24.11.5"),
        ROLLING,
        why="a staged upgrade's second half, backwards: the pool's own image, rolled",
    ),
    Mutation("pools.root_volume.size_gib", _set("pools.1.root_volume", {"size_gib": 300}), ROLLING),
    Mutation("pools.root_volume.iops", _set("pools.1.root_volume", {"iops": 6000}), ROLLING),
    Mutation(
        "pools.root_volume.throughput_mibps",
        _set("pools.1.root_volume", {"throughput_mibps": 500}),
        ROLLING,
    ),
    Mutation(
        "pools.instance_facts",
        _both(
            _set("pools.1.instance_type", "c9x.large"),
            _set("pools.1.instance_facts", FACTS),
        ),
        ROLLING,
    ),
    # People: every account change is pushed to every node (the agent's sync), no reboot;
    # a removed user is locked, never deleted.
    Mutation("users.name", _add_bob, LIVE, setup=_team, why="a new user"),
    Mutation(
        "users.name",
        _remove_bob,
        LIVE,
        setup=_both(_team, _add_bob),
        why="a removed user: locked on every node, files and id kept",
    ),
    Mutation("users.uid", _set("users.0.uid", 2005), LIVE, setup=_team),
    Mutation("users.group", _set("users.0.group", "gpu-users"), LIVE, setup=_team),
    Mutation("users.groups", _set("users.0.groups", ["gpu-users"]), LIVE, setup=_team),
    Mutation("users.ssh_keys", _set("users.0.ssh_keys", [KEY]), LIVE, setup=_team),
    Mutation(
        "users.iam_principal",
        _set("users.0.iam_principal", ROLE),
        NONE,
        setup=_team,
        why="Run As is a tag on the principal, outside the stack: plan prints the command",
    ),
    Mutation("users.admin", _set("users.0.admin", True), LIVE, setup=_team),
    Mutation("users.locked", _set("users.0.locked", True), LIVE, setup=_team),
    Mutation("users.shell", _set("users.0.shell", "/bin/zsh"), LIVE, setup=_team),
    Mutation("groups.name", _set("groups.1.name", "gpu"), LIVE, setup=_team),
    Mutation("groups.gid", _set("groups.1.gid", 3101), LIVE, setup=_team),
    Mutation(
        "directory.type",
        _set("directory.type", "active_directory"),
        LIVE,
        setup=_directory,
    ),
    Mutation(
        "directory.uris",
        _set("directory.uris", ["ldaps://ldap2.example.internal", "ldaps://ldap.example.internal"]),
        LIVE,
        setup=_directory,
    ),
    Mutation(
        "directory.search_base",
        _set("directory.search_base", "ou=people,dc=example,dc=internal"),
        LIVE,
        setup=_directory,
    ),
    Mutation(
        "directory.bind_dn",
        _set("directory.bind_dn", "cn=sssd,dc=example,dc=internal"),
        LIVE,
        setup=_bound_directory,
    ),
    Mutation(
        "directory.bind_password_secret",
        _set("directory.bind_password_secret", "chg/ldap-sssd"),
        LIVE,
        setup=_bound_directory,
    ),
    Mutation(
        "directory.ca_certificate",
        _set("directory.ca_certificate", CA_PEM.replace("MIIB", "MIIC")),
        LIVE,
        setup=_directory,
        why="a renewed CA",
    ),
    Mutation(
        "directory.admin_group", _set("directory.admin_group", "hpc-admins"), LIVE, setup=_directory
    ),
    Mutation(
        "directory.access_group",
        _set("directory.access_group", "hpc-users"),
        LIVE,
        setup=_directory,
    ),
    *(
        Mutation(
            f"directory.attributes.{name}",
            _set(f"directory.attributes.{name}", value),
            LIVE,
            setup=_directory,
        )
        for name, value in [
            ("user_name", "sAMAccountName"),
            ("uid_number", "msSFU30UidNumber"),
            ("gid_number", "msSFU30GidNumber"),
            ("home_directory", "unixHomeDirectory"),
            ("login_shell", "msSFU30LoginShell"),
            ("ssh_public_key", "altSecurityIdentities"),
            ("group_name", "sAMAccountName"),
            ("group_member", "member"),
        ]
    ),
    # Login pools: a pool's image or size rolls that pool only.
    Mutation(
        "login_pools.name",
        _set("login_pools.0.name", "login2"),
        DISRUPTIVE,
        False,
        setup=_login,
        why="a renamed pool is a new pool: the old one's nodes go with their sessions",
    ),
    Mutation(
        "login_pools.instance_type",
        _set("login_pools.0.instance_type", "m7i.4xlarge"),
        ROLLING,
        setup=_login,
    ),
    Mutation("login_pools.count", _set("login_pools.0.count", 3), LIVE, setup=_login),
    Mutation(
        "login_pools.ssh_cidrs",
        _set("login_pools.0.ssh_cidrs", ["203.0.113.0/24"]),
        LIVE,
        setup=_login,
    ),
    Mutation(
        "login_pools.load_balancer",
        _set("login_pools.0.load_balancer", True),
        LIVE,
        setup=_both(_login, _set("login_pools.0.ssh_cidrs", ["203.0.113.0/24"])),
    ),
    Mutation(
        "login_pools.ami", _set("login_pools.0.ami", "ami-0123456789abcdef0"), ROLLING, setup=_login
    ),
    Mutation(
        "login_pools.root_volume.size_gib",
        _set("login_pools.0.root_volume", {"size_gib": 300}),
        ROLLING,
        setup=_login,
    ),
    Mutation(
        "login_pools.root_volume.iops",
        _set("login_pools.0.root_volume", {"iops": 6000}),
        ROLLING,
        setup=_login,
    ),
    Mutation(
        "login_pools.root_volume.throughput_mibps",
        _set("login_pools.0.root_volume", {"throughput_mibps": 500}),
        ROLLING,
        setup=_login,
    ),
    Mutation(
        "login_pools.instance_facts",
        _both(
            _set("login_pools.0.instance_type", "m9x.large"),
            _set("login_pools.0.instance_facts", FACTS),
        ),
        ROLLING,
        setup=_login,
    ),
    Mutation(
        "login_pools.count",
        _set("login_pools.0.count", 3),
        LIVE,
        setup=_login_behind_balancer,
        why="behind the load balancer: the new node joins its target group",
    ),
    Mutation("storage.lustre.capacity_gib", _set("storage.lustre.capacity_gib", 7200), LIVE),
    Mutation(
        "storage.lustre.deployment",
        _both(
            _set("storage.lustre.deployment", "PERSISTENT_1"),
            _set("storage.lustre.throughput_per_tib", 100),
        ),
        DISRUPTIVE,
        False,
    ),
    Mutation(
        "storage.lustre.storage_type",
        _set(
            "storage.lustre",
            {
                "capacity_gib": 6000,
                "deployment": "PERSISTENT_1",
                "storage_type": "HDD",
                "throughput_per_tib": 12,
            },
        ),
        DISRUPTIVE,
        False,
    ),
    Mutation(
        "storage.lustre.throughput_per_tib", _set("storage.lustre.throughput_per_tib", 500), LIVE
    ),
    Mutation("storage.lustre.mount", _set("storage.lustre.mount", "/lustre"), ROLLING),
    Mutation(
        "storage.lustre.s3_import_export", _set("storage.lustre.s3_import_export", "data/"), LIVE
    ),
    Mutation("storage.lustre.compression", _set("storage.lustre.compression", "NONE"), LIVE),
    Mutation(
        "storage.lustre.efa",
        _set("storage.lustre.efa", False),
        DISRUPTIVE,
        False,
        setup=_set("storage.lustre.capacity_gib", 19200),  # EFA from this size up (efa: auto)
    ),
    Mutation("storage.lustre.metadata_iops", _set("storage.lustre.metadata_iops", 6000), LIVE),
    Mutation(
        "storage.home.type",
        _set("storage.home", None),
        ROLLING,
        False,
        why="the stack's own /home: the realistic change is removing it (the file system is "
        "retained; nodes roll to a bootstrap without the mount)",
    ),
    # Your file systems: nodes mount them at boot, so changing which one (or where) rolls the
    # pools; the stack never creates, changes or deletes them.
    Mutation(
        "storage.home.type",
        _set("storage.home", {"type": "openzfs", "file_system_id": YOUR_ZFS}),
        ROLLING,
        setup=_your_home,
        why="your /home moves from your EFS to your OpenZFS file system",
    ),
    Mutation(
        "storage.home.file_system_id",
        _set("storage.home.file_system_id", "fs-0b1c2d3e"),
        ROLLING,
        setup=_your_home,
    ),
    Mutation(
        "storage.home.export_path",
        _set("storage.home.export_path", "/fsx/home"),
        ROLLING,
        setup=_your_openzfs_home,
    ),
    Mutation(
        "storage.home.client_security_group_id",
        _set("storage.home.client_security_group_id", CLIENT_GROUP),
        ROLLING,
        setup=_your_home,
        why="every node joins your client group: a new launch template version, rolled out",
    ),
    Mutation(
        "storage.existing.type",
        _your_lustre,
        ROLLING,
        setup=_byo_network,
        why="a file system of yours added: nodes mount it from their next boot",
    ),
    Mutation(
        "storage.existing.type",
        _your_openzfs,
        ROLLING,
        setup=_your_lustre,
        why="/team moves from your Lustre to your OpenZFS file system",
    ),
    Mutation(
        "storage.existing.file_system_id",
        _set("storage.existing.0.file_system_id", "fs-0123456789abcdef1"),
        ROLLING,
        setup=_your_lustre,
    ),
    Mutation(
        "storage.existing.mount",
        _set("storage.existing.0.mount", "/projects"),
        ROLLING,
        setup=_your_lustre,
    ),
    Mutation(
        "storage.existing.export_path",
        _set("storage.existing.0.export_path", "/fsx/projects"),
        ROLLING,
        setup=_your_openzfs,
    ),
    Mutation(
        "storage.existing.client_security_group_id",
        _set("storage.existing.0.client_security_group_id", CLIENT_GROUP),
        ROLLING,
        setup=_your_lustre,
        why="every node joins your client group: a new launch template version, rolled out",
    ),
    # Associations: FSx links or unlinks a directory online; the files on the file system stay
    # (delete_data_in_filesystem is false).
    Mutation("storage.lustre.associations.path", _association, LIVE, why="an association added"),
    Mutation(
        "storage.lustre.associations.path",
        _set("storage.lustre.associations.0.path", "/data"),
        LIVE,
        setup=_association,
    ),
    Mutation(
        "storage.lustre.associations.bucket",
        _set("storage.lustre.associations.0.bucket", "team-datasets"),
        LIVE,
        setup=_association,
    ),
    Mutation(
        "storage.lustre.associations.prefix",
        _set("storage.lustre.associations.0.prefix", "datasets-v2/"),
        LIVE,
        setup=_association,
    ),
    Mutation(
        "storage.lustre.associations.bucket_region",
        _set("storage.lustre.associations.0.bucket_region", "us-west-2"),
        NONE,
        setup=_other_bucket_association,
        why="the Region is the checks' and the plan's (no automatic import across Regions, "
        "transfer prices); FSx reads it from the bucket",
    ),
    Mutation(
        "storage.lustre.associations.import_events",
        _set("storage.lustre.associations.0.import_events", ["NEW"]),
        LIVE,
        setup=_association,
    ),
    Mutation(
        "storage.lustre.associations.export_events",
        _set("storage.lustre.associations.0.export_events", []),
        LIVE,
        setup=_association,
    ),
    Mutation(
        "storage.lustre.associations.batch_import",
        _set("storage.lustre.associations.0.batch_import", False),
        LIVE,
        setup=_association,
    ),
    # Mountpoint: nodes mount at boot, so a changed mount rolls the pools (drained first).
    Mutation("storage.s3_mounts.mount", _s3_mount, ROLLING, why="a Mountpoint mount added"),
    Mutation(
        "storage.s3_mounts.mount",
        _set("storage.s3_mounts.0.mount", "/s3/datasets"),
        ROLLING,
        setup=_s3_mount,
    ),
    Mutation(
        "storage.s3_mounts.bucket",
        _set("storage.s3_mounts.0.bucket", "team-datasets-v2"),
        ROLLING,
        setup=_s3_mount,
    ),
    Mutation(
        "storage.s3_mounts.prefix",
        _set("storage.s3_mounts.0.prefix", "imagenet-21k/"),
        ROLLING,
        setup=_s3_mount,
    ),
    Mutation(
        "storage.s3_mounts.bucket_region",
        _set("storage.s3_mounts.0.bucket_region", "us-west-2"),
        ROLLING,
        setup=_s3_mount,
    ),
    Mutation(
        "storage.s3_mounts.read_only",
        _set("storage.s3_mounts.0.read_only", False),
        ROLLING,
        setup=_s3_mount,
    ),
    Mutation(
        "storage.s3_mounts.allow_delete",
        _set("storage.s3_mounts.0.allow_delete", True),
        ROLLING,
        setup=_writable_s3_mount,
    ),
    Mutation(
        "storage.s3_mounts.allow_overwrite",
        _set("storage.s3_mounts.0.allow_overwrite", True),
        ROLLING,
        setup=_writable_s3_mount,
    ),
    Mutation(
        "storage.s3_mounts.cache",
        _set("storage.s3_mounts.0.cache", False),
        ROLLING,
        setup=_scratch_s3_mount,
    ),
    Mutation(
        "storage.s3_mounts.cache_max_gib",
        _set("storage.s3_mounts.0.cache_max_gib", 200),
        ROLLING,
        setup=_scratch_s3_mount,
    ),
    Mutation(
        "storage.s3_mounts.metadata_ttl_seconds",
        _set("storage.s3_mounts.0.metadata_ttl_seconds", 300),
        ROLLING,
        setup=_s3_mount,
    ),
    Mutation(
        "storage.s3_mounts.allow_other",
        _set("storage.s3_mounts.0.allow_other", False),
        ROLLING,
        setup=_s3_mount,
    ),
    Mutation(
        "storage.home.mount",
        _set("storage.home.mount", "/home"),
        NONE,
        why="/home is its only accepted value ($HOME stays /home/<user>): writing it out changes "
        "nothing",
    ),
    Mutation("storage.bucket.versioning", _set("storage.bucket.versioning", False), LIVE),
    Mutation(
        "storage.bucket.noncurrent_version_days",
        _set("storage.bucket.noncurrent_version_days", 60),
        LIVE,
    ),
    Mutation(
        "storage.bucket.administrators",
        _set("storage.bucket.administrators", ["arn:aws:iam::123456789012:role/ci-destroy"]),
        LIVE,
        why="the bucket policy's version-deletion exemption, updated in place",
    ),
    Mutation("storage.protect", _set("storage.protect", False), LIVE),
    Mutation(
        "slurm.version",
        _set("slurm.version", "26.05.5"),
        HEAD,
        setup=_set("slurm.version", "24.11.5"),
        why="the head is replaced with the new release's image, then the pools roll",
    ),
    Mutation(
        "slurm.upgrade_from",
        lambda d: d["slurm"].pop("upgrade_from"),
        LIVE,
        setup=lambda d: d.setdefault("slurm", {}).update(version="26.05.5", upgrade_from="24.11.5"),
        why="removed once every pool runs slurm.version: slurm.conf is pushed to the nodes",
    ),
    Mutation("slurm.default_partition", _set("slurm.default_partition", "cpu"), LIVE),
    Mutation("slurm.settings", _set("slurm.settings", {"MaxJobCount": 20000}), LIVE),
    Mutation(
        "slurm.accounting.enabled",
        _set("slurm.accounting", {"enabled": False}),
        LIVE,
    ),
    Mutation("slurm.accounting.database.type", _rds_db, LIVE),
    Mutation(
        "slurm.accounting.database.host",
        _set("slurm.accounting.database.host", "db2.example.internal"),
        LIVE,
        setup=_external_db,
    ),
    Mutation(
        "slurm.accounting.database.port",
        _set("slurm.accounting.database.port", 3307),
        LIVE,
        setup=_external_db,
    ),
    Mutation(
        "slurm.accounting.database.name",
        _set("slurm.accounting.database.name", "acct"),
        LIVE,
        setup=_external_db,
    ),
    Mutation(
        "slurm.accounting.database.user",
        _set("slurm.accounting.database.user", "acct"),
        LIVE,
        setup=_external_db,
    ),
    Mutation(
        "slurm.accounting.database.password_secret",
        _set("slurm.accounting.database.password_secret", "chg/slurmdbd2"),
        LIVE,
        setup=_external_db,
    ),
    Mutation(
        "slurm.accounting.database.instance_class",
        _set("slurm.accounting.database.instance_class", "db.t4g.medium"),
        LIVE,
        setup=_rds_db,
    ),
    Mutation(
        "slurm.accounting.database.storage_gib",
        _set("slurm.accounting.database.storage_gib", 100),
        LIVE,
        setup=_rds_db,
    ),
    Mutation(
        "slurm.accounting.database.subnet_ids",
        _set(
            "slurm.accounting.database.subnet_ids",
            ["subnet-0123456789abcdef0", "subnet-0bbbbbbbbbbbbbbbb"],
        ),
        LIVE,
        setup=_both(
            _byo_network,
            _rds_db,
            _set(
                "slurm.accounting.database.subnet_ids",
                ["subnet-0123456789abcdef0", "subnet-0aaaaaaaaaaaaaaaa"],
            ),
        ),
    ),
    Mutation(
        "slurm.accounting.accounts.name", _set("slurm.accounting.accounts.0.name", "science"), LIVE
    ),
    Mutation(
        "slurm.accounting.accounts.description",
        _set("slurm.accounting.accounts.0.description", "the research group"),
        LIVE,
    ),
    Mutation(
        "slurm.accounting.accounts.parent",
        _both(
            _set(
                "slurm.accounting.accounts",
                [
                    {"name": "lab"},
                    {"name": "research", "parent": "lab", "users": ["alice"], "qos": ["standard"]},
                ],
            ),
        ),
        LIVE,
    ),
    Mutation(
        "slurm.accounting.accounts.fairshare",
        _set("slurm.accounting.accounts.0.fairshare", 10),
        LIVE,
    ),
    Mutation(
        "slurm.accounting.accounts.users",
        _set("slurm.accounting.accounts.0.users", ["alice", "bob"]),
        LIVE,
    ),
    Mutation(
        "slurm.accounting.accounts.qos",
        _both(
            _set("slurm.accounting.qos", [{"name": "standard"}, {"name": "high"}]),
            _set("slurm.accounting.accounts.0.qos", ["standard", "high"]),
        ),
        LIVE,
    ),
    Mutation(
        "slurm.accounting.accounts.default_qos",
        _set("slurm.accounting.accounts.0.default_qos", "high"),
        LIVE,
        setup=_both(
            _set("slurm.accounting.qos", [{"name": "standard"}, {"name": "high"}]),
            _set("slurm.accounting.accounts.0.qos", ["standard", "high"]),
        ),
    ),
    Mutation(
        "slurm.accounting.accounts.grp_tres",
        _set("slurm.accounting.accounts.0.grp_tres", {"gres/gpu": 8}),
        LIVE,
    ),
    Mutation(
        "slurm.accounting.qos.name",
        _both(
            _set("slurm.accounting.qos.0.name", "everyday"),
            _set("slurm.accounting.accounts.0.qos", ["everyday"]),
        ),
        LIVE,
    ),
    Mutation(
        "slurm.accounting.qos.description",
        _set("slurm.accounting.qos.0.description", "everyday jobs"),
        LIVE,
    ),
    Mutation("slurm.accounting.qos.priority", _set("slurm.accounting.qos.0.priority", 10), LIVE),
    Mutation(
        "slurm.accounting.qos.max_wall_minutes",
        _set("slurm.accounting.qos.0.max_wall_minutes", 1440),
        LIVE,
    ),
    Mutation(
        "slurm.accounting.qos.max_jobs_per_user",
        _set("slurm.accounting.qos.0.max_jobs_per_user", 4),
        LIVE,
    ),
    Mutation(
        "slurm.accounting.qos.max_tres_per_user",
        _set("slurm.accounting.qos.0.max_tres_per_user", {"gres/gpu": 16}),
        LIVE,
    ),
    Mutation(
        "slurm.accounting.qos.max_tres_per_job",
        _set("slurm.accounting.qos.0.max_tres_per_job", {"gres/gpu": 8}),
        LIVE,
    ),
    Mutation(
        "slurm.accounting.qos.grp_tres",
        _set("slurm.accounting.qos.0.grp_tres", {"gres/gpu": 16}),
        LIVE,
    ),
    Mutation("slurm.accounting.enforce", _set("slurm.accounting.enforce", False), LIVE),
    Mutation(
        "slurm.accounting.fairshare_weight", _set("slurm.accounting.fairshare_weight", 5000), LIVE
    ),
    Mutation("slurm.accounting.qos_weight", _set("slurm.accounting.qos_weight", 5000), LIVE),
    Mutation(
        "slurm.accounting.keep_job_records_months",
        _set("slurm.accounting.keep_job_records_months", 12),
        LIVE,
    ),
    Mutation("nccl.env", _set("nccl.env", {"NCCL_DEBUG": "INFO"}), LIVE),
    Mutation(
        "cost.instance_hourly_usd",
        _set("cost.instance_hourly_usd", {"p5.48xlarge": 60.0}),
        LIVE,
        why="the head's elastic-capacity configuration carries the prices it compares",
    ),
    Mutation("cost.lustre_usd_per_gib_month", _set("cost.lustre_usd_per_gib_month", 0.2), NONE),
    Mutation("image.version", _set("image.version", 2), ROLLING),
    Mutation("image.ami", _set("image.ami", "ami-0123456789abcdef0"), ROLLING),
    Mutation(
        "image.parents",
        _set("image.parents", {"nvidia-x86-64": "ami-0123456789abcdef0"}),
        ROLLING,
        why="a pinned parent is a new image for the pools built on it",
    ),
    Mutation(
        "image.parents.parameter_version",
        _set("image.parents", {"nvidia-x86-64": {"parameter_version": 42}}),
        ROLLING,
        why="the parameter version's AMI is the recipe's parent: a new image",
    ),
    Mutation("image.keep_build_instance", _set("image.keep_build_instance", True), NONE),
    Mutation("image.build_instance_type", _set("image.build_instance_type", "c7i.4xlarge"), NONE),
    Mutation(
        "image.rollout.min_healthy_percentage",
        _set("image.rollout.min_healthy_percentage", 75),
        LIVE,
    ),
    Mutation(
        "image.rollout.instance_warmup_seconds",
        _set("image.rollout.instance_warmup_seconds", 1200),
        LIVE,
    ),
    Mutation("health.check_interval_seconds", _set("health.check_interval_seconds", 600), LIVE),
    Mutation("health.deep_diagnostic", _set("health.deep_diagnostic", False), LIVE),
    Mutation("health.disk_full_percent", _set("health.disk_full_percent", 90), LIVE),
    Mutation("health.breaker.replacements", _set("health.breaker.replacements", 5), LIVE),
    Mutation("health.breaker.window_minutes", _set("health.breaker.window_minutes", 120), LIVE),
    Mutation(
        "health.capacity_block_drain_minutes",
        _set("health.capacity_block_drain_minutes", 90),
        LIVE,
        setup=_set(
            "pools.0.capacity", {"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}
        ),
    ),
    Mutation("health.scale_in_wait_minutes", _set("health.scale_in_wait_minutes", 240), LIVE),
    Mutation("health.actions", _set("health.actions", {"efa-port": "leave"}), LIVE),
    Mutation("health.xids", _set("health.xids", {167: "reboot"}), LIVE),
    # Observing the cluster (docs/observing.md): the head's monitoring files change through the
    # config store and its apply-config association; the alert topic, log groups and budget are
    # changed in place.
    Mutation("observability.retention_days", _set("observability.retention_days", 30), LIVE),
    Mutation("observability.retention_gib", _set("observability.retention_gib", 40), LIVE),
    Mutation(
        "observability.scrape_interval_seconds",
        _set("observability.scrape_interval_seconds", 60),
        LIVE,
    ),
    Mutation(
        "observability.alerts.email",
        _set("observability.alerts.email", ["ops@example.com"]),
        NONE,
        why="a subscription to the alert topic is added",
    ),
    Mutation(
        "observability.alerts.idle_gpu_minutes",
        _set("observability.alerts.idle_gpu_minutes", 60),
        LIVE,
    ),
    Mutation(
        "observability.alerts.idle_gpu_percent",
        _set("observability.alerts.idle_gpu_percent", 10),
        LIVE,
    ),
    Mutation(
        "observability.alerts.straggler_percent",
        _set("observability.alerts.straggler_percent", 40),
        LIVE,
    ),
    Mutation(
        "observability.alerts.filesystem_full_percent",
        _set("observability.alerts.filesystem_full_percent", 95),
        LIVE,
    ),
    Mutation(
        "observability.alerts.capacity_block_hours",
        _set("observability.alerts.capacity_block_hours", 48),
        LIVE,
    ),
    Mutation(
        "observability.budget_monthly_usd", _set("observability.budget_monthly_usd", 500000), LIVE
    ),
    Mutation(
        "observability.log_retention_days", _set("observability.log_retention_days", 90), LIVE
    ),
    Mutation(
        "observability.managed_prometheus",
        _set("observability.managed_prometheus", True),
        LIVE,
        why="a new workspace, and the head's Prometheus configuration pushed to it",
    ),
    Mutation(
        "observability.managed_grafana",
        _set("observability.managed_grafana", True),
        NONE,
        setup=_set("observability.managed_prometheus", True),
        why="a new Amazon Managed Grafana workspace; no node changes",
    ),
    Mutation("tags", _set("tags", {"team": "research"}), ROLLING),
]


LABELS = {
    NONE: "no effect",
    LIVE: "pushed live",
    ROLLING: "rolling replacement",
    HEAD: "head restart",
    DISRUPTIVE: "DISRUPTIVE",
}


def _describe(
    change: Callable[[Definition], None], setup: Callable[[Definition], None] | None
) -> str:
    before = copy.deepcopy(BASE)
    if setup is not None:
        setup(before)
    after = copy.deepcopy(before)
    change(after)
    return _delta(before, after)


def _delta(before: Any, after: Any, path: str = "") -> str:
    if isinstance(before, dict) and isinstance(after, dict):
        parts = [
            _delta(before.get(k), after.get(k), f"{path}.{k}" if path else str(k))
            for k in sorted(set(before) | set(after), key=str)
            if before.get(k) != after.get(k)
        ]
        return "; ".join(p for p in parts if p)
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        parts = [
            _delta(a, b, f"{path}[{i}]")
            for i, (a, b) in enumerate(zip(before, after, strict=True))
            if a != b
        ]
        return "; ".join(parts)
    return f"`{path}`: {json.dumps(before)} -> {json.dumps(after)}"


def field_table() -> str:
    """What changing each field does: docs/reference/change-fields.md (written by tools/docs.py)."""
    lines = ["| field | change tested | class | ordinary |", "| --- | --- | --- | --- |"]
    for m in MUTATIONS:
        what = _describe(m.change, m.setup).replace("|", "\\|")
        if m.why:
            what += f" ({m.why})"
        lines.append(
            f"| `{m.field}` | {what} | {LABELS[m.expected]} | {'yes' if m.ordinary else 'no'} |"
        )
    return "\n".join(lines)
