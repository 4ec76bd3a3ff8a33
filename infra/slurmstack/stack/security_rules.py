"""The security groups' rules as data, before they become resources (slurmstack.stack.security):
which ports each group opens to which peer, and why. No Pulumi here."""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.contract import (
    NODE_EXPORTER_PORT,
    SLURMCTLD_PORT,
    SLURMD_PORT,
    SLURMDBD_PORT,
    SRUN_PORT_RANGE,
)
from slurmstack.plan import ClusterPlan
from slurmstack.stack.common import (
    EVERYWHERE_V4,
    LUSTRE_CALLBACK_PORTS,
    LUSTRE_PORT,
    NFS_PORT,
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
    if plan.head.backup and plan.spec.slurm.accounting.enabled:
        # The backup's slurmctld reaches the head's slurmdbd, and the head's the backup's.
        what = "Slurm slurmdbd from the other controller"
        rules.append(
            Rule("slurmdbd-from-self", "tcp", (SLURMDBD_PORT, SLURMDBD_PORT), "self", what)
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
    if plan.head.backup and not plan.creates_home:  # Slurm's state on EFS, both controllers
        nfs, what = (NFS_PORT, NFS_PORT), "NFS (EFS Slurm state) from head"
        rules.append(Rule("nfs-from-head", "tcp", nfs, "head", what))
    if rules:
        rules.append(Rule("egress-all", ALL, None, EVERYWHERE_V4, "all outbound", egress=True))
    return rules


def needs_storage_group(plan: ClusterPlan) -> bool:
    return plan.lustre is not None or plan.creates_home or plan.head.backup
