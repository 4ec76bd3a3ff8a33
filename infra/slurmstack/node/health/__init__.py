"""A node's health: its checks (devices, GPUs through nvidia-smi, EFA ports, the kernel log's
XIDs, file systems, volumes, EC2's notices, DCGM's diagnostic), run at every boot before slurmd
starts (boot) and by Slurm's HealthCheckProgram (periodic). A finding has a check and a detail:
the node's Slurm reason is `slurmstack:<check>: <detail>` (slurmstack.contract.reason)."""

from .commands import COMMANDS

__all__ = ["COMMANDS"]
