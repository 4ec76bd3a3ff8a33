"""The accounting database: its password, generated at deploy time and kept in Secrets Manager
(like the munge key), and for type rds the RDS instance. The head node reads the password
through its role and writes it into slurmdbd.conf itself, so it is in no user data, stack
output, config store object or resource input but the secret version's and the RDS instance's
(which Pulumi keeps encrypted). An external database brings its own secret
(slurm.accounting.database.password_secret): nothing is created for it here.
"""

from __future__ import annotations

import pulumi
import pulumi_aws.ec2 as ec2
import pulumi_aws.rds as rds
import pulumi_aws.secretsmanager as secretsmanager
import pulumi_aws.vpc as vpc
import pulumi_random as random_

from slurmstack.catalog import load_catalog
from slurmstack.contract import DeployParameter, resource_name
from slurmstack.plan import (
    INNODB_LOCK_WAIT_TIMEOUT,
    MAX_ALLOWED_PACKET_MIB,
    RDS_ENGINE_VERSION,
    RDS_PARAMETER_FAMILY,
    AccountingPlan,
    ClusterPlan,
    plan_rds_subnets,
)
from slurmstack.stack import parameters
from slurmstack.stack.common import Role, tags

# 32 letters and digits (about 190 bits): nothing slurmdbd.conf's parser or SQL would need to
# escape, and within what RDS takes for a master password.
PASSWORD_LENGTH = 32


class AccountingPassword(pulumi.ComponentResource):
    """RandomPassword -> Secret + SecretVersion (SecretString), for the local and rds databases."""

    secret: secretsmanager.Secret
    password: random_.RandomPassword

    def __init__(
        self,
        plan: ClusterPlan,
        accounting: AccountingPlan,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        name = resource_name(plan.name, "accounting-db-password")
        super().__init__("slurmstack:stack:AccountingPassword", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.password = random_.RandomPassword(
            name, length=PASSWORD_LENGTH, special=False, opts=child
        )
        self.secret = secretsmanager.Secret(
            name,
            name=accounting.database.password_secret,
            description=(
                f"slurmstack {plan.name}: password of the accounting database user "
                f"{accounting.database.user} ({accounting.database.type.value} database)"
            ),
            # The database keeps its records whatever happens to this secret, so no recovery
            # window: a secret pending deletion would block re-creating a cluster of the same
            # name for up to 30 days.
            recovery_window_in_days=0,
            tags=tags(plan, Role.SECRETS, name),
            opts=child,
        )
        secretsmanager.SecretVersion(
            name,
            secret_id=self.secret.id,
            secret_string=self.password.result,
            opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["secret_string"]),
        )
        self.register_outputs({"secret_arn": self.secret.arn})


class AccountingRds(pulumi.ComponentResource):
    """type rds: an RDS for MariaDB instance, private, encrypted, reachable from the head node
    only, in a DB subnet group of two zones (two /28 subnets of a new VPC, or the definition's
    subnet_ids in an existing one). Its address is published as a deploy-time parameter that
    the head's agent waits for (slurmdbd.conf's StorageHost); the master user is slurmdbd's."""

    instance: rds.Instance

    def __init__(
        self,
        plan: ClusterPlan,
        accounting: AccountingPlan,
        *,
        vpc_id: pulumi.Input[str],
        head_security_group_id: pulumi.Input[str],
        password: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        name = resource_name(plan.name, Role.ACCOUNTING)
        super().__init__("slurmstack:stack:AccountingRds", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        db = accounting.database
        spec = plan.spec.slurm.accounting.database
        subnet_ids: list[pulumi.Input[str]] = list(spec.subnet_ids)
        if not subnet_ids:
            layout = plan_rds_subnets(plan, load_catalog())
            if not layout:
                raise ValueError("no room for the accounting database's subnets (see checks)")
            for index, (cidr, zone) in enumerate(layout):
                subnet_name = resource_name(plan.name, Role.ACCOUNTING, f"db-{index}")
                subnet = ec2.Subnet(
                    subnet_name,
                    vpc_id=vpc_id,
                    cidr_block=str(cidr),
                    availability_zone=zone,
                    map_public_ip_on_launch=False,
                    tags=tags(plan, Role.ACCOUNTING, subnet_name),
                    opts=child,
                )
                subnet_ids.append(subnet.id)
        group = rds.SubnetGroup(
            name,
            name=name,
            subnet_ids=subnet_ids,
            description=f"slurmstack {plan.name}: accounting database",
            tags=tags(plan, Role.ACCOUNTING, name),
            opts=child,
        )
        firewall = ec2.SecurityGroup(
            name,
            vpc_id=vpc_id,
            description=f"slurmstack {plan.name}: accounting database, from the head node only",
            tags=tags(plan, Role.ACCOUNTING, name),
            opts=child,
        )
        rule = resource_name(plan.name, Role.ACCOUNTING, "from-head")
        from_head = vpc.SecurityGroupIngressRule(
            rule,
            security_group_id=firewall.id,
            ip_protocol="tcp",
            from_port=db.port,
            to_port=db.port,
            referenced_security_group_id=head_security_group_id,
            description="slurmdbd on the head node",
            tags=tags(plan, Role.ACCOUNTING, rule),
            opts=child,
        )
        parameters_group = rds.ParameterGroup(
            name,
            name=name,
            family=RDS_PARAMETER_FAMILY,
            description=f"slurmstack {plan.name}: slurmdbd's recommended InnoDB settings",
            # slurmdbd's advice (accounting_storage_mysql.c); the buffer pool is RDS's own
            # three quarters of the instance's memory already.
            parameters=[
                {"name": "innodb_lock_wait_timeout", "value": str(INNODB_LOCK_WAIT_TIMEOUT)},
                {"name": "max_allowed_packet", "value": str(MAX_ALLOWED_PACKET_MIB << 20)},
            ],
            tags=tags(plan, Role.ACCOUNTING, name),
            opts=child,
        )
        keep = plan.spec.storage.protect
        final_snapshot = None
        if keep:
            # Made once with the instance and kept in the stack's state: a cluster destroyed
            # and created again under the same name (a new stack, or a new instance) names its
            # final snapshot anew, where "<name>-final" would collide with the first one's and
            # RDS would refuse the second delete (DBSnapshotAlreadyExists).
            suffix = random_.RandomId(f"{name}-final-snapshot", byte_length=4, opts=child)
            final_snapshot = suffix.hex.apply(lambda hex_: f"{name}-final-{hex_}")
        self.instance = rds.Instance(
            name,
            identifier=name,
            engine="mariadb",
            engine_version=RDS_ENGINE_VERSION,
            instance_class=spec.instance_class,
            allocated_storage=spec.storage_gib,
            storage_type="gp3",
            storage_encrypted=True,
            db_name=db.name,
            username=db.user,
            password=password,
            port=db.port,
            db_subnet_group_name=group.name,
            vpc_security_group_ids=[firewall.id],
            parameter_group_name=parameters_group.name,
            publicly_accessible=False,
            multi_az=False,
            backup_retention_period=7,
            copy_tags_to_snapshot=True,
            # Protected like the state volume: the records outlive a mistaken destroy, and a
            # final snapshot is taken when it is deleted on purpose.
            deletion_protection=keep,
            skip_final_snapshot=not keep,
            final_snapshot_identifier=final_snapshot,
            tags=tags(plan, Role.ACCOUNTING, name),
            opts=pulumi.ResourceOptions(parent=self, protect=keep, depends_on=[from_head]),
        )
        parameters.publish(
            plan,
            DeployParameter.ACCOUNTING_DB_HOST,
            self.instance.address,
            role=Role.ACCOUNTING,
            parent=self,
        )
        self.register_outputs({"address": self.instance.address})
