"""AWS's and Slurm's network facts: Slurm's ports, the instance metadata service, partitions and
ARNs."""

from __future__ import annotations

__all__ = [
    "IMDS_IPV4",
    "IMDS_IPV6",
    "SLURMCTLD_PORT",
    "SLURMDBD_PORT",
    "SLURMD_PORT",
    "SRUN_PORT_RANGE",
    "instance_arn",
    "partition",
]

# --- network ---------------------------------------------------------------------------

# Slurm's ports: slurm.conf uses them and the stack's security groups open exactly these.
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
SRUN_PORT_RANGE = (60001, 63000)
# slurmdbd's (slurmdbd.conf DbdPort, slurm.conf AccountingStoragePort): Slurm's default. Only
# the head node talks to it (slurmctld, sacct and sacctmgr run there), so no group opens it.
SLURMDBD_PORT = 6819

# The instance metadata service (IPv6 only answers on Nitro instances that enable it).
IMDS_IPV4 = "169.254.169.254"
IMDS_IPV6 = "fd00:ec2::254"


def partition(region: str) -> str:
    """The AWS partition of a region (ARNs depend on it)."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def instance_arn(region: str, account: str, instance_id: str) -> str:
    return f"arn:{partition(region)}:ec2:{region}:{account}:instance/{instance_id}"
