"""Security groups: head node, workers, storage. Rules are separate resources (the groups
reference each other, which inline rules cannot express without a cycle)."""

from __future__ import annotations

import pulumi
import pulumi_aws.ec2 as ec2
import pulumi_aws.vpc as vpc

from slurmstack.contract import resource_name
from slurmstack.plan import ClusterPlan
from slurmstack.stack.common import Role, tags
from slurmstack.stack.security_rules import (
    Rule,
    head_rules,
    login_rules,
    needs_storage_group,
    storage_rules,
    worker_rules,
)


class SecurityGroups(pulumi.ComponentResource):
    """head: Slurm ports from the cluster only, SSH only from ssh_cidrs. workers: everything
    within the group (EFA) and from the head. storage: Lustre and NFS from the cluster only.
    login (with login pools): srun's ports from the head and workers, SSH from the login pools'
    ssh_cidrs only.

    A group's rules are resources of their own, created in parallel with whatever uses the
    group's id. What needs the rules in place when it is created waits for them through
    ``rules_of``: FSx checks the storage group's rules when it creates a file system (port 988,
    and all traffic within the group when EFA-enabled) and fails with InvalidNetworkSettings
    when they are late, a race reported against ParallelCluster's CloudFormation and against
    Terraform; an EFS mount target, the head node and the workers' first boot need theirs too.
    """

    head: ec2.SecurityGroup
    workers: ec2.SecurityGroup
    storage: ec2.SecurityGroup | None
    login: ec2.SecurityGroup | None
    # owner ("head", "workers", "storage") -> its ingress and egress rule resources
    rules: dict[str, list[pulumi.Resource]]

    def __init__(
        self,
        plan: ClusterPlan,
        vpc_id: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        name = resource_name(plan.name, Role.SECURITY)
        super().__init__("slurmstack:stack:SecurityGroups", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        def group(suffix: str, description: str) -> ec2.SecurityGroup:
            sg_name = resource_name(plan.name, suffix)
            return ec2.SecurityGroup(
                sg_name,
                name=sg_name,
                description=description,
                vpc_id=vpc_id,
                tags=tags(plan, Role.SECURITY, sg_name),
                opts=child,
            )

        self.head = group("head", f"slurmstack {plan.name}: Slurm head node")
        self.workers = group("workers", f"slurmstack {plan.name}: worker nodes (EFA)")
        self.storage = (
            group("storage", f"slurmstack {plan.name}: Lustre and EFS")
            if needs_storage_group(plan)
            else None
        )
        self.login = (
            group("login", f"slurmstack {plan.name}: login nodes") if plan.login_pools else None
        )
        groups = {
            "head": self.head,
            "workers": self.workers,
            "storage": self.storage,
            "login": self.login,
        }
        self.rules = {"head": [], "workers": [], "storage": [], "login": []}
        for owner, rules in (
            ("head", head_rules(plan)),
            ("workers", worker_rules(plan)),
            ("storage", storage_rules(plan)),
            ("login", login_rules(plan)),
        ):
            target = groups[owner]
            if target is None:
                continue
            for rule in rules:
                self.rules[owner].append(self._rule(plan, owner, target, rule, groups, child))
        self.register_outputs({"head": self.head.id, "workers": self.workers.id})

    def rules_of(self, *owners: str) -> tuple[pulumi.Resource, ...]:
        """The ingress and egress rules of the named groups, for ``depends_on``."""
        return tuple(rule for owner in owners for rule in self.rules[owner])

    def _rule(
        self,
        plan: ClusterPlan,
        owner: str,
        target: ec2.SecurityGroup,
        rule: Rule,
        groups: dict[str, ec2.SecurityGroup | None],
        opts: pulumi.ResourceOptions,
    ) -> pulumi.Resource:
        peer_group = target if rule.peer == "self" else groups.get(rule.peer)
        cidr = None if rule.peer in groups or rule.peer == "self" else rule.peer
        name = resource_name(plan.name, f"{owner}-{rule.suffix}")
        rule_class = vpc.SecurityGroupEgressRule if rule.egress else vpc.SecurityGroupIngressRule
        return rule_class(
            name,
            security_group_id=target.id,
            ip_protocol=rule.protocol,
            from_port=rule.ports[0] if rule.ports else None,
            to_port=rule.ports[1] if rule.ports else None,
            cidr_ipv4=cidr,
            referenced_security_group_id=peer_group.id if cidr is None and peer_group else None,
            description=rule.description,
            tags=tags(plan, Role.SECURITY, name),
            opts=opts,
        )
