"""Security groups: head node, workers, storage. Rules are separate resources (the groups
reference each other, which inline rules cannot express without a cycle)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws.ec2 as ec2
import pulumi_aws.vpc as vpc

from slurmstack.contract import (
    NODE_EXPORTER_PORT,
    SLURMCTLD_PORT,
    SLURMD_PORT,
    SLURMDBD_PORT,
    SRUN_PORT_RANGE,
    resource_name,
)
from slurmstack.plan import ClusterPlan
from slurmstack.stack.common import (
    EVERYWHERE_V4,
    LUSTRE_CALLBACK_PORTS,
    LUSTRE_PORT,
    NFS_PORT,
    Role,
    tags,
)

ALL = "-1"  # every protocol and port


@dataclass(frozen=True)
class Rule:
    """One ingress or egress rule, before it becomes a resource."""

    suffix: str  # unique within the group: becomes part of the logical name
    protocol: str
    ports: tuple[int, int] | None  # None with protocol "-1"
    peer: str  # "self", "head", "workers", "storage", "login", or a CIDR
    description: str
    egress: bool = False


def head_rules(plan: ClusterPlan) -> list[Rule]:
    rules: list[Rule] = []
    slurm_ports = [
        ("slurmctld", (SLURMCTLD_PORT, SLURMCTLD_PORT)),
        ("slurmd", (SLURMD_PORT, SLURMD_PORT)),
        ("srun", SRUN_PORT_RANGE),  # slurm.conf SrunPortRange: steps call back to srun here
    ]
    for what, ports in slurm_ports:
        for peer in ("workers", "self"):
            rules.append(
                Rule(f"{what}-from-{peer}", "tcp", ports, peer, f"Slurm {what} from {peer}")
            )
    # sacct, sshare and sreport ask slurmdbd directly: from login nodes and workers too (its
    # clients authenticate with munge; slurmdbd listens on the head, accounting or not).
    if plan.spec.slurm.accounting.enabled:
        for peer in ("workers", *(("login",) if plan.login_pools else ())):
            rules.append(
                Rule(
                    f"slurmdbd-from-{peer}",
                    "tcp",
                    (SLURMDBD_PORT, SLURMDBD_PORT),
                    peer,
                    f"Slurm slurmdbd (sacct, sshare) from {peer}",
                )
            )
    if plan.login_pools:
        what = "Slurm slurmctld from login nodes (sbatch, srun, squeue; sackd's configuration)"
        ports = (SLURMCTLD_PORT, SLURMCTLD_PORT)
        rules.append(Rule("slurmctld-from-login", "tcp", ports, "login", what))
    for index, cidr in enumerate(plan.spec.network.ssh_cidrs):
        rules.append(
            Rule(f"ssh-{index}", "tcp", (22, 22), str(cidr), f"SSH from {cidr} (ssh_cidrs)")
        )
    rules.append(Rule("egress-all", ALL, None, EVERYWHERE_V4, "all outbound", egress=True))
    return rules


def login_rules(plan: ClusterPlan) -> list[Rule]:
    """Login nodes: srun's ports from the head and the workers (slurmctld's and the steps'
    calls back to srun, SrunPortRange), node_exporter's from the head's Prometheus, SSH from
    the login pools' ssh_cidrs only; no other inbound port (Session Manager's SSH needs none)."""
    rules = [
        Rule(f"srun-from-{peer}", "tcp", SRUN_PORT_RANGE, peer, f"Slurm srun from {peer}")
        for peer in ("head", "workers")
    ]
    exporter = (NODE_EXPORTER_PORT, NODE_EXPORTER_PORT)
    rules.append(Rule("node-exporter-from-head", "tcp", exporter, "head", "node_exporter"))
    cidrs = sorted({cidr for pool in plan.login_pools for cidr in pool.ssh_cidrs})
    for index, cidr in enumerate(cidrs):
        rules.append(
            Rule(f"ssh-{index}", "tcp", (22, 22), cidr, f"SSH from {cidr} (login ssh_cidrs)")
        )
    if any(pool.load_balancer for pool in plan.login_pools):
        # The pools' Network Load Balancers carry this group too: their health checks (and the
        # connections they forward) must be let in from it, or every target is unhealthy.
        rules.append(
            Rule("ssh-from-load-balancer", "tcp", (22, 22), "self", "SSH from the load balancer")
        )
    rules.append(Rule("egress-all", ALL, None, EVERYWHERE_V4, "all outbound", egress=True))
    return rules


def worker_rules(plan: ClusterPlan) -> list[Rule]:
    rules = [
        # EFA requires both directions within the group: its SRD traffic is not IP, and the
        # 0.0.0.0/0 egress rule does not cover it.
        Rule("all-from-self", ALL, None, "self", "all traffic within the workers (EFA, NCCL, MPI)"),
        Rule("all-to-self", ALL, None, "self", "all traffic within the workers (EFA)", egress=True),
        Rule(
            "all-from-head",
            ALL,
            None,
            "head",
            "slurmctld, srun and interactive steps from the head",
        ),
        Rule("egress-all", ALL, None, EVERYWHERE_V4, "all outbound", egress=True),
    ]
    if plan.login_pools:
        # srun on a login node reaches slurmd and its steps (ephemeral ports) on the workers.
        rules.append(Rule("tcp-from-login", "tcp", (0, 65535), "login", "srun from login nodes"))
    if plan.lustre is not None and plan.lustre.efa:
        rules += [
            Rule("all-from-storage", ALL, None, "storage", "EFA-enabled Lustre servers"),
            Rule("all-to-storage", ALL, None, "storage", "EFA-enabled Lustre servers", egress=True),
        ]
    return rules


def storage_rules(plan: ClusterPlan) -> list[Rule]:
    rules: list[Rule] = []
    login = ("login",) if plan.login_pools else ()
    if plan.lustre is not None:
        for peer in ("head", "workers", "self", *login):
            rules.append(
                Rule(
                    f"lnet-from-{peer}",
                    "tcp",
                    (LUSTRE_PORT, LUSTRE_PORT),
                    peer,
                    f"Lustre LNet from {peer}",
                )
            )
            rules.append(
                Rule(
                    f"lustre-callbacks-from-{peer}",
                    "tcp",
                    LUSTRE_CALLBACK_PORTS,
                    peer,
                    f"Lustre from {peer}",
                )
            )
        if plan.lustre.efa:
            rules += [
                Rule("all-from-self", ALL, None, "self", "EFA-enabled Lustre (all traffic within)"),
                Rule(
                    "all-to-self",
                    ALL,
                    None,
                    "self",
                    "EFA-enabled Lustre (all traffic within)",
                    egress=True,
                ),
                Rule("all-from-workers", ALL, None, "workers", "EFA-enabled Lustre clients"),
                Rule(
                    "all-to-workers",
                    ALL,
                    None,
                    "workers",
                    "EFA-enabled Lustre clients",
                    egress=True,
                ),
            ]
    if plan.creates_home:
        for peer in ("head", "workers", *login):
            rules.append(
                Rule(
                    f"nfs-from-{peer}",
                    "tcp",
                    (NFS_PORT, NFS_PORT),
                    peer,
                    f"NFS (EFS /home) from {peer}",
                )
            )
    if rules:
        rules.append(Rule("egress-all", ALL, None, EVERYWHERE_V4, "all outbound", egress=True))
    return rules


def needs_storage_group(plan: ClusterPlan) -> bool:
    return plan.lustre is not None or plan.creates_home


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
