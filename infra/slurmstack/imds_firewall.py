"""Who may reach the instance metadata service (IMDS) on a node: root (and on the head node
SlurmUser, for the elastic nodes' power programs), and no one else.

IMDS hands the instance role's credentials to any process that asks. Left open, a job user
could take them, read the munge key from Secrets Manager and forge munge credentials as uid 0
on every node. Every node therefore loads an nftables rule set (templates/nftables/
imds-firewall.nft.j2) that refuses IMDS traffic from every socket not owned by one of the users
below, and all IMDS traffic forwarded from other network namespaces (bridged containers),
whatever uid sent it. Enroot/pyxis containers share the host's network namespace and keep the
job user's uid as the kernel sees it (a user namespace's "root" is the job user outside it), so
the owner match covers them. (A container given the host's network with real uid 0, as a
member of docker's group can start, is root: such membership must not be handed to job users.)

Also allowed, on the head node only: ``slurm`` (SlurmUser). slurmctld runs the power programs
of elastic pools (ResumeProgram, SuspendProgram, ResumeFailProgram; their sweep runs as the same
user) as SlurmUser, and they launch, name and terminate the elastic nodes' instances with the
head's role. Every head allows it, elastic pools or not: the rules travel in the head's
first-boot document, which a running head never reads again, and a pool made elastic later
must not need a new head. The alternative, a root helper the programs call through sudo, gives
the same power to the same user with more moving parts. It lets no one further than they could
already go: SlurmUser is slurmctld itself, which can run any job as any user on every node; no
job runs on the head node (it runs no slurmd) and no job user runs as SlurmUser. On workers,
where slurmd runs as root and jobs run, ``slurm`` stays refused.

Also allowed, on the head node only: ``prometheus`` (the head's Prometheus). With
``observability.managed_prometheus`` it signs its remote writes to the cluster's Amazon Managed
Service for Prometheus workspace itself (its remote_write sigv4 section), with the head's role,
whose credentials it reads from the metadata service. Every head allows it, for the reason
``slurm`` is allowed on every head (the rules travel in the first-boot document). Nothing that
runs as ``prometheus`` takes input from people: the server listens on loopback, on the head,
where no job runs and only operators log in; its own permission is aps:RemoteWrite on the one
workspace, beside what the head's role already holds. On workers and login nodes it stays
refused (their node_exporter runs as ``prometheus`` and calls nothing).

Deliberately not allowed (named so nobody adds them without a reason):
- ``slurm`` (SlurmUser) on workers: nothing it runs there calls AWS.
- ``munge``: munged never talks to AWS; the key is fetched by root.
- ``ssm-user``: the Session Manager shell; an operator who needs the node's credentials uses
  sudo, which the SSM user has on the head and workers, and only admins have on login nodes
  (see docs/threat-model.md).
- People (the definition's users, a directory's): they log in to login nodes and run jobs; a
  login node's firewall is the workers' (root only).
- ``ec2-instance-connect``: sshd's EC2 Instance Connect key lookup; the cluster's shells are
  Session Manager, or SSH with keys when ``network.ssh_cidrs`` asks for it.
- ``_chrony``: Amazon Time Sync is 169.254.169.123, another address, untouched here.

Pure: no Pulumi import; render passes :func:`firewall` to the templates.
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmstack.contract import (
    IMDS_FIREWALL_RULES_PATH,
    IMDS_FIREWALL_UNIT,
    IMDS_IPV4,
    IMDS_IPV6,
    MUNGE_UNIT,
    SLURM_USER,
    SLURMCTLD_UNIT,
    SLURMD_UNIT,
    unit_path,
)

# The metadata service's addresses are slurmstack.contract's IMDS_IPV4 and IMDS_IPV6 (IPv6 only
# answers on Nitro instances that enable it; refused all the same, so enabling it later opens
# nothing).
# The one nftables table slurmstack owns: loading replaces only this table, so docker's,
# ufw's or an operator's own rule sets are left as they are.
TABLE = "slurmstack_imds"

RULES_PATH = IMDS_FIREWALL_RULES_PATH
UNIT_NAME = IMDS_FIREWALL_UNIT
UNIT_PATH = unit_path(UNIT_NAME)
NFT = "/usr/sbin/nft"


@dataclass(frozen=True)
class MetadataUser:
    """A local user allowed to reach the metadata service, and why it must."""

    name: str
    why: str


ROOT = MetadataUser("root", "cloud-init, the node agent, slurmd, the SSM agent")
SLURM = MetadataUser(
    SLURM_USER,
    "SlurmUser: slurmctld's power programs launch, name and terminate the elastic nodes",
)
PROMETHEUS = MetadataUser(
    "prometheus",
    "the head's Prometheus: signs its remote writes to the managed Prometheus workspace",
)


@dataclass(frozen=True)
class MetadataFirewall:
    """What the rule set and its systemd unit are rendered from."""

    role: str  # "head" or a pool name
    users: tuple[MetadataUser, ...]
    # Units that must not start before the rules are loaded (and do not start if they fail).
    guarded_units: tuple[str, ...]
    ipv4: str = IMDS_IPV4
    ipv6: str = IMDS_IPV6
    table: str = TABLE
    rules_path: str = RULES_PATH
    nft: str = NFT
    unit_name: str = UNIT_NAME


def firewall(role: str, *, head: bool) -> MetadataFirewall:
    """The metadata firewall of the head node (``head``) or of a node of pool ``role``."""
    daemon = SLURMCTLD_UNIT if head else SLURMD_UNIT
    users = (ROOT, SLURM, PROMETHEUS) if head else (ROOT,)
    return MetadataFirewall(role=role, users=users, guarded_units=(MUNGE_UNIT, daemon))
