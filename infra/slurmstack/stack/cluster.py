"""SlurmCluster: the whole cluster from one plan, as one component other Pulumi programs
can import::

    from slurmstack.plan import build_plan
    from slurmstack.stack import SlurmCluster

    cluster = SlurmCluster(build_plan(spec))
    pulumi.export("head", cluster.head.instance.id)

Dependencies are kept to what AWS needs, so the slow resources run in parallel: the head
node and the pools wait for the network, security groups (and their rules) and instance
profiles only, never for Lustre or EFS (nodes read those addresses from SSM parameters at
boot). Lustre and the EFS mount target wait for the storage group's rules, which AWS checks
when it creates them.
"""

from __future__ import annotations

import pulumi

from slurmstack.contract import DeployParameter
from slurmstack.plan import ClusterPlan, accounting_plan
from slurmstack.stack import parameters
from slurmstack.stack.accounting import AccountingPassword, AccountingRds
from slurmstack.stack.bucket import ClusterBucket
from slurmstack.stack.common import Role
from slurmstack.stack.config_store import ConfigStore
from slurmstack.stack.efs import HomeFileSystem
from slurmstack.stack.existing_storage import ExistingFileSystems
from slurmstack.stack.head_backup import BackupController, StateFileSystem
from slurmstack.stack.head_node import HeadNode
from slurmstack.stack.head_recovery import HeadRecovery
from slurmstack.stack.identity import Identity
from slurmstack.stack.image import NodeImages
from slurmstack.stack.login_pool import LoginPool
from slurmstack.stack.lustre import LustreStorage
from slurmstack.stack.monitoring import Monitoring
from slurmstack.stack.network import Network, NetworkRefs, existing_network
from slurmstack.stack.secrets import MungeKey
from slurmstack.stack.security import SecurityGroups
from slurmstack.stack.worker_pool import WorkerPool


class SlurmCluster(pulumi.ComponentResource):
    network: Network | None
    network_refs: NetworkRefs
    security: SecurityGroups
    munge: MungeKey
    accounting: AccountingPassword | None
    accounting_rds: AccountingRds | None
    bucket: ClusterBucket
    identity: Identity
    lustre: LustreStorage | None
    home: HomeFileSystem | None
    existing: ExistingFileSystems | None
    images: NodeImages
    head: HeadNode
    config: ConfigStore
    pools: dict[str, WorkerPool]
    login_pools: dict[str, LoginPool]
    monitoring: Monitoring
    head_recovery: HeadRecovery | None
    backup_recovery: HeadRecovery | None
    state_file_system: StateFileSystem | None
    backup: BackupController | None

    def __init__(self, plan: ClusterPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("slurmstack:index:SlurmCluster", plan.name, None, opts)
        self.plan = plan
        child = pulumi.ResourceOptions(parent=self)

        if plan.spec.network.vpc_id is not None:
            self.network = None
            self.network_refs = existing_network(plan)
        else:
            self.network = Network(plan, opts=child)
            self.network_refs = self.network.refs
        net = self.network_refs

        self.security = SecurityGroups(plan, net.vpc_id, opts=child)
        self.munge = MungeKey(plan, opts=child)
        self.bucket = ClusterBucket(plan, opts=child)
        # Accounting (slurm.accounting): the database password's secret, when the stack makes it.
        accounting = accounting_plan(plan)
        self.accounting = None
        if accounting is not None and accounting.database.stack_creates_secret:
            self.accounting = AccountingPassword(plan, accounting, opts=child)
        self.accounting_rds = None
        if accounting is not None and self.accounting is not None and accounting.database.rds:
            self.accounting_rds = AccountingRds(
                plan,
                accounting,
                vpc_id=net.vpc_id,
                head_security_group_id=self.security.head.id,
                password=self.accounting.password.result,
                opts=child,
            )
        self.identity = Identity(
            plan,
            bucket_arn=self.bucket.bucket.arn,
            secret_arn=self.munge.secret.arn,
            accounting_secret_arn=self.accounting.secret.arn if self.accounting else None,
            opts=child,
        )

        storage_sg = self.security.storage
        self.lustre = None
        if plan.lustre is not None and storage_sg is not None:
            self.lustre = LustreStorage(
                plan,
                subnet_id=net.compute_subnet_id,
                security_group_id=storage_sg.id,
                bucket=self.bucket.bucket.id,
                security_ready=self.security.rules_of("storage"),
                opts=child,
            )
        self.home = None
        if plan.creates_home and storage_sg is not None:
            self.home = HomeFileSystem(
                plan,
                subnet_id=net.compute_subnet_id,
                security_group_id=storage_sg.id,
                security_ready=self.security.rules_of("storage"),
                opts=child,
            )

        # File systems of yours: looked up and checked, never managed (needs your VPC, which
        # the checks require of storage.existing).
        self.existing = None
        if plan.existing_file_systems and plan.spec.network.vpc_id is not None:
            subnets = [plan.spec.network.compute_subnet_id]
            if plan.head_in_public_subnet:
                subnets.append(plan.spec.network.public_subnet_id)
            self.existing = ExistingFileSystems(
                plan,
                vpc_id=plan.spec.network.vpc_id,
                subnet_ids=[s for s in subnets if s is not None],
                opts=child,
            )

        # Built once, then kept: the head and the pools boot these AMIs (nothing installed at boot).
        self.images = NodeImages(
            plan,
            vpc_id=net.vpc_id,
            subnet_id=net.compute_subnet_id,
            bucket=self.bucket.bucket.id,
            bucket_arn=self.bucket.bucket.arn,
            network_ready=net.ready,
            opts=child,
        )
        self.head = HeadNode(
            plan,
            compute_subnet_id=net.compute_subnet_id,
            public_subnet_id=net.public_subnet_id,
            security_group_id=self.security.head.id,
            instance_profile=self.identity.head_profile.name,
            ami=self.images.ami("head"),
            network_ready=net.ready,
            public_network_ready=net.public_ready,
            security_ready=self.security.rules_of("head"),
            opts=child,
        )
        # head_node.backup: a standby controller, and Slurm's state on EFS both mount.
        self.state_file_system = None
        self.backup = None
        if plan.head.backup and storage_sg is not None:
            self.state_file_system = StateFileSystem(
                plan,
                subnet_id=net.compute_subnet_id,
                security_group_id=storage_sg.id,
                security_ready=self.security.rules_of("storage"),
                opts=child,
            )
            self.backup = BackupController(
                plan,
                subnet_id=net.compute_subnet_id,
                security_group_id=self.security.head.id,
                instance_profile=self.identity.head_profile.name,
                ami=self.head.ami_parameter.insecure_value,
                ready=[*net.ready, *self.security.rules_of("head")],
                opts=child,
            )
        controllers = [self.head.instance, *([self.backup.instance] if self.backup else [])]
        self.pools = {
            pool.name: WorkerPool(
                plan,
                pool,
                subnet_id=net.compute_subnet_id,
                security_group_id=self.security.workers.id,
                instance_profile_arn=self.identity.pool_profiles[pool.name].arn,
                image_id=self.images.ami(pool.name),
                network_ready=net.ready,
                security_ready=self.security.rules_of("workers"),
                # Slurm's upgrade order: the controllers (slurmdbd, slurmctld) before the nodes.
                controller=controllers,
                opts=child,
            )
            for pool in plan.pools
        }
        login_sg = self.security.login
        self.login_pools = {
            login.name: LoginPool(
                plan,
                login,
                subnet_id=net.compute_subnet_id,
                public_subnet_id=net.public_subnet_id,
                vpc_id=net.vpc_id,
                security_group_id=login_sg.id,
                instance_profile_arn=self.identity.login_profiles[login.name].arn,
                image_id=self.images.ami(login.role),
                network_ready=net.ready,
                security_ready=self.security.rules_of("login"),
                controller=controllers,
                opts=child,
            )
            for login in plan.login_pools
            if login_sg is not None
        }
        self.compute_subnet_parameter = None
        if plan.elastic_pools:
            # The head's ResumeProgram launches elastic nodes into the compute subnet.
            self.compute_subnet_parameter = parameters.publish(
                plan,
                DeployParameter.COMPUTE_SUBNET_ID,
                net.compute_subnet_id,
                role=Role.NETWORK,
                parent=self,
            )
        # The alert topic, the log groups and the budget: nothing waits for them (the roles
        # name them by their names; the relay reads the topic's parameter when it sends).
        self.monitoring = Monitoring(plan, head_role=self.identity.head_role, opts=child)
        # The head recovers by itself from a failed host or a hung OS, and says so.
        self.head_recovery = self.backup_recovery = None
        if plan.head.auto_recovery:
            self.head_recovery = HeadRecovery(
                plan,
                instance_id=self.head.instance.id,
                topic_arn=self.monitoring.topic.arn,
                opts=child,
            )
            if self.backup is not None:
                self.backup_recovery = HeadRecovery(
                    plan,
                    instance_id=self.backup.instance.id,
                    topic_arn=self.monitoring.topic.arn,
                    controller="backup",
                    opts=child,
                )
        self.config = ConfigStore(
            plan, bucket=self.bucket.bucket.id, head_instance_id=self.head.instance.id, opts=child
        )
        self.register_outputs(self.outputs())

    def outputs(self) -> dict[str, pulumi.Input[object]]:
        """The stack outputs (slurmstack.stack.outputs)."""
        from slurmstack.stack.outputs import stack_outputs

        return stack_outputs(self)
