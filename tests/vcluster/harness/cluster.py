"""VirtualCluster: a cluster definition booted on this machine, a namespace per node.

    with VirtualCluster(Path("definitions/two-pools.yaml")) as cluster:
        cluster.head.run("sinfo")

``start`` runs the Pulumi program under the offline engine, puts what it registers into moto
(deploy.py), then boots the head node and every instance moto's Auto Scaling groups launched
from their user data (node.py, cloudinit.py) and waits until every worker has registered with
slurmctld. The methods after it are what scenarios do to a cluster: kill a worker, let its
group replace it, replace the head node, apply a configuration change. ``close`` removes every
process, namespace and file of the run, whatever state it is in.
"""

from __future__ import annotations

import base64
import gzip
import ipaddress
import itertools
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import yaml

from slurmstack.contract import (
    HEAD_ROLE,
    LOGIN_POOL_TAG,
    POOL_ROLE,
    POOL_TAG,
    is_login_role,
    login_role,
    node_name,
    node_name_prefix,
    resource_name,
)
from slurmstack.node.health.periodic import TARGET_LIFECYCLE_STATE
from slurmstack.node.slurm import parse_node_line
from slurmstack.offline import OfflineRun, run_definition
from slurmstack.offline.existing import world_for
from slurmstack.plan import ClusterPlan, build_plan
from slurmstack.validate import validate_object

from . import associations, deploy, groups
from .aws import MotoServer
from .cloudinit import parse
from .database import ExternalDatabase
from .database import wanted as external_database_wanted
from .imds import Instance, MetadataService
from .netns import NAME_PREFIX, NETNS_DIR, Fabric, ip, stale_namespaces
from .node import Hardware, Node
from .node_slurm import NodeSlurm, from_env
from .standins import existing_source_directory

T = TypeVar("T")
HEAD = HEAD_ROLE
REGISTER_SECONDS = 90
# One cluster per process at a time: namespaces and directories carry the process id.
RUN_ID = str(os.getpid())
RUN_DIR_PREFIX = "vcluster-"
# Clusters of one process (the shared one and a scenario's own) carry <pid>-<n> in their
# namespaces and directories: they may run at the same time.
_CLUSTERS = itertools.count()


def remove_stale_runs() -> None:
    """What runs killed before their cleanup left: their namespaces, and their directories in
    the temporary directory (their processes died with them; see node.py)."""
    for namespace in stale_namespaces():
        ip("netns", "delete", namespace, check=False)
    for directory in Path(tempfile.gettempdir()).glob(f"{RUN_DIR_PREFIX}*-*"):
        pid = directory.name.removeprefix(RUN_DIR_PREFIX).split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(directory, ignore_errors=True)


def wait_until(predicate: Callable[[], T], what: str, timeout: float, poll: float = 0.5) -> T:
    """The first truthy value of ``predicate()``, polled for at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)


class VirtualCluster:
    def __init__(
        self,
        definition: Path,
        keep: bool = False,
        before_boot: Callable[[VirtualCluster], None] | None = None,
        slurm: NodeSlurm | None = None,
    ) -> None:
        """``before_boot`` runs once the fabric and AWS are up and the stack is deployed, before
        any node boots: what a cluster's operator has in place before `pulumi up` (a
        directory server, a secret the definition names)."""
        self.before_boot = before_boot
        self.definition: dict[str, Any] = yaml.safe_load(definition.read_text())
        # Stand-in "slurm-version": written for the Slurm the nodes run.
        self.slurm = slurm or from_env()
        self.definition.setdefault("slurm", {})["version"] = self.slurm.version
        result = validate_object(self.definition, source=str(definition))
        assert result.ok and result.spec is not None, [f.line() for f in result.findings]
        self.plan: ClusterPlan = build_plan(result.spec)
        self.keep = keep
        self.run_id = f"{RUN_ID}-{next(_CLUSTERS)}"
        self.directory = Path(tempfile.mkdtemp(prefix=f"{RUN_DIR_PREFIX}{self.run_id}-"))
        self.head: Node | None = None
        self.backup: Node | None = None  # head_node.backup's controller
        self.workers: dict[str, Node] = {}  # instance id -> node
        self.logins: dict[str, Node] = {}  # instance id -> node of a login pool
        self.gone: list[Node] = []  # killed nodes, kept for their logs
        self._created: list[Node] = []  # every node this run made, whatever became of it
        self._fabric: Fabric | None = None
        self._aws: MotoServer | None = None
        self._imds: MetadataService | None = None
        self.database: ExternalDatabase | None = None  # stand-in "external-database"
        self.timings: dict[str, float] = {}
        self.associations: list[associations.Association] = []

    # --- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> VirtualCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        began = time.monotonic()
        self.offline = self.program(self.definition)
        existing = self.existing_network()
        subnet = ipaddress.IPv4Network(deploy.compute_cidr(self.offline, existing))
        remove_stale_runs()
        self._fabric = Fabric(self.run_id, subnet)
        self._aws = MotoServer(self._fabric, self.plan.region)
        self._imds = MetadataService()
        self._imds.serve(self._fabric)
        self.deployment = deploy.deploy(self.offline, self._aws, self.slurm, existing)
        if external_database_wanted(self.plan, self._fabric):
            self.database = ExternalDatabase(self.plan, self.directory / "external-database")
            self.database.serve(self._fabric, self._aws)
        if self.before_boot is not None:
            self.before_boot(self)
        # Stand-in "fsx-associations": the program's associations, created as FSx would.
        self.associations = associations.registered(self.offline)
        associations.create(self.aws.client("s3"), self.associations, self.lustre_directory)
        self.timings["deploy"] = time.monotonic() - began
        self.head = self.boot([self.deployment.head_instance_id])[0]
        self.timings["head"] = time.monotonic() - began
        # The backup controller (head_node.backup) boots with the workers: their slurmd fetch
        # the configuration from the head, the first server they list.
        backup = [self.deployment.backup_instance_id] if self.deployment.backup_instance_id else []
        booted = self.boot([*backup, *self.group_instances()])
        self.backup = booted[0] if backup else None
        self.timings["workers"] = time.monotonic() - began
        self.wait_registered()
        self.timings["registered"] = time.monotonic() - began

    def close(self) -> None:
        """Every node killed, servers stopped, namespaces and files removed; each step runs
        even when an earlier one fails."""
        for node in self._created:
            try:
                node.kill()
            except Exception as exc:  # keep cleaning up
                print(f"vcluster: killing {node.label()}: {exc}")
        for service in (self.database, self._imds, self._aws, self._fabric):
            if service is not None:
                try:
                    service.close()
                except Exception as exc:
                    print(f"vcluster: closing {type(service).__name__}: {exc}")
        if not self.keep:
            shutil.rmtree(self.directory, ignore_errors=True)

    def leftovers(self) -> list[str]:
        """What is left of this run after ``close`` (nothing, unless cleanup failed)."""
        out = [f"process of {n.label()}" for n in self._all_nodes() if n.running()]
        if self.database is not None and self.database.running():
            out.append("the external database stand-in's server")
        prefix = f"{NAME_PREFIX}{self.run_id}-"
        namespaces = os.listdir(NETNS_DIR) if os.path.isdir(NETNS_DIR) else []
        out += [f"namespace {n}" for n in namespaces if n.startswith(prefix)]
        if self.directory.exists() and not self.keep:
            out.append(f"directory {self.directory}")
        return out

    def _all_nodes(self) -> list[Node]:
        return list(self._created)

    @property
    def fabric(self) -> Fabric:
        assert self._fabric is not None, "the cluster is not started"
        return self._fabric

    @property
    def aws(self) -> MotoServer:
        assert self._aws is not None, "the cluster is not started"
        return self._aws

    def existing_network(self) -> deploy.ExistingNetwork | None:
        """Your VPC's subnets, when the definition names them (network.vpc_id): the ones the
        offline engine's lookups find (slurmstack.offline.existing), which moto gets too."""
        if not (self.definition.get("network") or {}).get("vpc_id"):
            return None
        subnets = world_for(self.definition).subnet_cidrs
        return deploy.ExistingNetwork(zone=self.plan.availability_zone, subnets=subnets)

    @staticmethod
    def program(definition: dict[str, Any]) -> OfflineRun:
        """The Pulumi program under the offline engine, as `slurmstack plan` runs it."""
        run = run_definition(definition)
        run.raise_error()
        return run

    # --- nodes ------------------------------------------------------------------------------

    def group_instances(self) -> list[str]:
        """Instance ids of every pool's Auto Scaling group that are in service."""
        groups = self.aws.client("autoscaling").describe_auto_scaling_groups(
            AutoScalingGroupNames=list(self.deployment.groups.values())
        )["AutoScalingGroups"]
        return [
            i["InstanceId"]
            for g in groups
            for i in g["Instances"]
            if i["LifecycleState"] == "InService"
        ]

    def describe(self, instance_id: str) -> tuple[Instance, str]:
        """The instance as moto has it, for the metadata service, and its role."""
        ec2 = self.aws.client("ec2")
        found = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
        attribute = ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        # gzip-compressed, as the stack gives it to EC2; cloud-init decompresses it.
        user_data = gzip.decompress(base64.b64decode(attribute["UserData"]["Value"])).decode()
        tags = {t["Key"]: t["Value"] for t in found.get("Tags", [])}
        pool = tags.get(POOL_TAG, HEAD)
        role = login_role(tags[LOGIN_POOL_TAG]) if LOGIN_POOL_TAG in tags else pool
        worker = role != HEAD and not is_login_role(role)
        instance = Instance(
            instance_id=instance_id,
            address=found["PrivateIpAddress"],
            instance_type=found["InstanceType"],
            availability_zone=found["Placement"]["AvailabilityZone"],
            user_data=user_data,
            mac=found["NetworkInterfaces"][0]["MacAddress"],
            tags=tags if worker and self.tags_in_metadata(role) else None,
        )
        return instance, role

    def tags_in_metadata(self, pool: str) -> bool:
        """Whether the pool's launch template puts the instance's tags in its metadata (moto
        keeps the option with the template, not with the instances it launches from it)."""
        versions = self.aws.client("ec2").describe_launch_template_versions(
            LaunchTemplateName=resource_name(self.plan.name, POOL_ROLE, pool), Versions=["$Default"]
        )["LaunchTemplateVersions"]
        options = versions[0]["LaunchTemplateData"].get("MetadataOptions", {})
        return options.get("InstanceMetadataTags") == "enabled"

    def hardware(self, role: str) -> Hardware:
        if role == HEAD or is_login_role(role):
            return Hardware()
        pool = self.plan.pool(role)
        return Hardware(gpus=pool.expected_gpus, efa_devices=pool.expected_efa_devices)

    def boot(self, instance_ids: list[str]) -> list[Node]:
        """Instances become nodes: namespaces made here, one after the other (the node's
        first process must be a child of this thread), user data run in parallel."""
        assert self._fabric is not None and self._imds is not None
        nodes = []
        for instance_id in instance_ids:
            instance, role = self.describe(instance_id)
            self._imds.register(instance)
            label = f"{role.replace('/', '-')}-{instance_id}"  # login/<pool>: no '/' in names
            node = Node(
                self._fabric,
                self.directory / "nodes" / label,
                instance,
                role,
                self.hardware(role),
                self.aws.node_endpoint,
                label=label,
                run_directory=self.directory,
                layers=self.slurm.layers(),
            )
            self._created.append(node)
            if is_login_role(role):
                self.logins[instance_id] = node
            elif role != HEAD:
                self.workers[instance_id] = node
            nodes.append(node)
        with ThreadPoolExecutor(max_workers=max(len(nodes), 1)) as pool:
            list(pool.map(self._run_user_data, nodes))
        return nodes

    # --- shared storage (stand-ins "shared-storage", "existing-file-systems",
    # "fsx-associations") -------------------------------------------------------------------

    @property
    def shared_directory(self) -> Path:
        """What every node's mounts step mounts from."""
        return self.directory / "shared"

    @property
    def lustre_directory(self) -> Path:
        """The stack's own Lustre file system, as every node has it at its mount."""
        return self.shared_directory / "lustre"

    def existing_directory(self, fstype: str, source: str) -> Path:
        """A file system of yours, as the nodes that mount ``source`` see it."""
        return existing_source_directory(self.shared_directory, fstype, source)

    def sync_associations(self) -> tuple[list[str], list[str]]:
        """FSx's automatic import and export, one pass: (imported, exported) paths."""
        return associations.sync(self.aws.client("s3"), self.associations, self.lustre_directory)

    def _run_user_data(self, node: Node) -> None:
        step_dirs = {
            "scratch": str(node.directory / "scratch"),
            "mounts": str(self.shared_directory),
            "state-volume": str(self.directory / "state-volume"),
        }
        node.boot(parse(node.instance.user_data), step_dirs, self.slurm.absent)

    def slurm_name(self, node: Node) -> str:
        return node_name(node_name_prefix(node.role), node.address)

    def pool_nodes(self, pool: str) -> list[Node]:
        return sorted(
            (n for n in self.workers.values() if n.role == pool), key=lambda n: n.instance_id
        )

    def kill(self, node: Node) -> None:
        """The instance dies (its processes and its network at once)."""
        assert self._imds is not None
        node.kill()
        self._imds.unregister(node.address)
        self.workers.pop(node.instance_id, None)
        self.logins.pop(node.instance_id, None)
        self.gone.append(node)

    def replace(self, dead: Node) -> Node:
        """What the group's health check does for a dead instance: terminate it, keeping the
        capacity, so moto launches a replacement; the replacement boots."""
        before = set(self.group_instances())
        self.aws.client("autoscaling").terminate_instance_in_auto_scaling_group(
            InstanceId=dead.instance_id, ShouldDecrementDesiredCapacity=False
        )
        new = wait_until(
            lambda: sorted(set(self.group_instances()) - before),
            f"a replacement for {dead.instance_id}",
            timeout=30,
        )
        return self.boot(new)[0]

    def notice(self, node: Node, path: str, value: str | None) -> None:
        """What EC2's metadata service tells ``node`` at a meta-data path (None: nothing)."""
        assert self._imds is not None
        self._imds.notice(node.address, path, value)

    # --- what the pools' groups do (stand-ins "asg-health", "asg-lifecycle") ----------------

    def begin_termination(self, instance_id: str) -> None:
        """The instance's group starts terminating it (a scale-in, a refresh, a replacement):
        it waits in the group's drain hook, and its metadata says so."""
        assert self._imds is not None
        backend = groups.backend(self.plan.region)
        state = groups.member(backend, instance_id)
        assert state is not None, f"{instance_id} is in no group"
        if groups.has_drain_hook(backend, state.auto_scaling_group_name):
            state.lifecycle_state = groups.WAIT
        else:
            state.lifecycle_state = groups.PROCEED
        address = self.describe(instance_id)[0].address
        self._imds.notice(address, TARGET_LIFECYCLE_STATE, "Terminated")

    def lifecycle_completed(self, instance_id: str) -> str | None:
        """The result its drain lifecycle action was completed with (None: not completed)."""
        return self.aws.lifecycle.completed.get(instance_id)

    def lifecycle_heartbeats(self, instance_id: str) -> int:
        return self.aws.lifecycle.heartbeats[instance_id]

    def settle_groups(self) -> list[Node]:
        """What the pools' groups do between two looks: an instance marked Unhealthy starts
        terminating (unless its group's ReplaceUnhealthy process is suspended); one whose
        lifecycle action was completed goes, and its group launches the instance that keeps
        its capacity, which boots. Returns the nodes booted."""
        backend = groups.backend(self.plan.region)
        for name in self.deployment.groups.values():
            replaces = groups.replaces_unhealthy(backend, name)
            for state in list(backend.autoscaling_groups[name].instance_states):
                unhealthy = state.health_status == "Unhealthy"
                if replaces and unhealthy and state.lifecycle_state == "InService":
                    self.begin_termination(state.instance.id)
        gone = [
            state.instance.id
            for name in self.deployment.groups.values()
            for state in backend.autoscaling_groups[name].instance_states
            if state.lifecycle_state == groups.PROCEED
        ]
        booted: list[Node] = []
        for instance_id in gone:
            before = set(self.group_instances())
            node = self.workers.get(instance_id) or self.logins.get(instance_id)
            if node is not None:
                self.kill(node)
            backend.terminate_instance(instance_id, should_decrement=False)
            booted += self.boot(sorted(set(self.group_instances()) - before))
        return booted

    def replace_head(self, new_interface: bool = False) -> Node:
        """The head instance is replaced (`pulumi up --replace`): the old one stops (slurmctld
        is stopped cleanly, the state volume is detached) and is terminated; the new one is
        launched as the program launches it, on the head's own network interface, which
        outlived the old one: at the same address. It boots with the same state volume.

        ``new_interface``: the interface is replaced as well (what `pulumi up` does when the
        head moves to another subnet): the new head gets a new interface, so a new address,
        which the head address parameter (the interface's address in the program) takes."""
        assert self.head is not None and self._imds is not None
        old, self.head = self.head, None
        if old.alive:  # a head that died already (a scenario killed it) stops nothing
            old.run("systemctl", "stop", "slurmctld")
        old.kill()
        self._imds.unregister(old.address)
        self.gone.append(old)
        self.aws.client("ec2").terminate_instances(InstanceIds=[old.instance_id])
        if new_interface:
            self._replace_head_interface()
        new_id = deploy.launch_head(self.offline, self.aws, self.deployment.head_interface)
        self.head = self.boot([new_id])[0]
        return self.head

    def _replace_head_interface(self) -> None:
        """The old interface deleted, a new one made as the program describes it, and the
        head address parameter set to its address, as `pulumi up` would."""
        old = self.deployment.head_interface
        self.aws.client("ec2").delete_network_interface(NetworkInterfaceId=old)
        new = deploy.create_interface(
            self.aws,
            deploy.head_interface(self.offline),
            self.deployment.subnet_ids,
            self.deployment.security_groups,
        )
        self.deployment.head_interface = new
        name = self.deployment.parameter(deploy.HEAD_ADDRESS_SUFFIX)
        address = deploy.interface_address(self.aws, new)
        self.aws.client("ssm").put_parameter(Name=name, Value=address, Overwrite=True)
        self.deployment.parameters[name] = address

    # --- Slurm, seen from the head node --------------------------------------------------

    def kill_head(self) -> Node:
        """The head instance dies (its processes and its network at once); it stays
        ``self.head`` until ``replace_head`` launches its successor. Returns it."""
        assert self.head is not None and self._imds is not None
        self.head.kill()
        self._imds.unregister(self.head.address)
        return self.head

    @property
    def client(self) -> Node:
        """Where Slurm's commands run: the head, or while it is dead the backup controller
        (its slurm.conf lists both controllers, as every client's does)."""
        if self.head is not None and self.head.alive:
            return self.head
        assert self.backup is not None and self.backup.alive, "no controller is alive"
        return self.backup

    def node_records(self) -> dict[str, dict[str, str]]:
        assert self.head is not None
        out = self.client.run("scontrol", "--all", "--oneliner", "show", "node", check=False)
        records = [parse_node_line(x) for x in out.stdout.splitlines() if x.startswith("NodeName=")]
        return {r["NodeName"]: r for r in records}

    def wait_registered(self, timeout: float = REGISTER_SECONDS) -> dict[str, dict[str, str]]:
        """Every worker's record IDLE (or busy) and responding."""
        names = {self.slurm_name(n) for n in self.workers.values()}

        def ready() -> dict[str, dict[str, str]] | None:
            records = self.node_records()
            states = {n: records.get(n, {}).get("State", "") for n in names}
            ok = all(
                s.split("+")[0] in ("IDLE", "MIXED", "ALLOCATED") and "NOT_RESPONDING" not in s
                for s in states.values()
            )
            return records if ok else None

        try:
            return wait_until(ready, f"{sorted(names)} to register", timeout)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from None

    # --- configuration changes ---------------------------------------------------------

    def apply_config(self, definition: dict[str, Any]) -> str:
        """A changed definition, deployed the way `pulumi up` deploys it: the store gets the
        new files and manifest, the manifest parameter its new key, and the associations run
        their documents (their commands, read back from moto, with the associations'
        parameters): apply-config on the head node, then sync-nodes on every other node.
        Returns the head's command's output."""
        assert self.head is not None
        run = self.program(definition)
        manifest_key = deploy.publish_config(run, self.aws, self.deployment.bucket, self.slurm)
        ssm = self.aws.client("ssm")
        manifest_parameter = self.deployment.parameter(deploy.MANIFEST_SUFFIX)
        ssm.put_parameter(Name=manifest_parameter, Value=manifest_key, Overwrite=True)
        out = self.head.run("/bin/sh", "-c", self._script(run, ssm, "apply-config"), timeout=120)
        script = self._script(run, ssm, "sync-nodes")
        for node in [*self.workers.values(), *self.logins.values()]:
            node.run("/bin/sh", "-c", script, timeout=120)
        return out.stdout

    def _script(self, run: OfflineRun, ssm: Any, suffix: str) -> str:
        """The runCommand lines of the cluster's document ``<cluster>-<suffix>``, with its
        association's parameters."""
        name = f"{self.plan.name}-{suffix}"
        association = next(a for a in run.of_type(deploy.ASSOCIATION) if a.name == name)
        content = json.loads(ssm.get_document(Name=name)["Content"])
        lines = content["mainSteps"][0]["inputs"]["runCommand"]
        for key, value in association.inputs["parameters"].items():
            lines = [line.replace("{{ " + key + " }}", value) for line in lines]
        return "\n".join(lines)

    # --- diagnostics ------------------------------------------------------------------------

    def logs(self) -> str:
        return "\n".join(node.logs() for node in self._all_nodes())
