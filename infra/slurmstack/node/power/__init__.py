"""Slurm's power saving for the pools' elastic nodes, on the head node.

slurmctld runs three programs of slurm.conf as SlurmUser: ResumeProgram (``resume``: launch an
instance for each node a pending job needs, from its pool's launch template, and tell Slurm its
address), SuspendProgram (``suspend``: terminate the instances of nodes idle past their pool's
SuspendTime) and ResumeFailProgram (``resume_fail``: terminate the instances of nodes that did not
register within ResumeTimeout). A failed launch leaves its nodes DOWN with the reason
``slurmstack:launch: <AWS error>`` and powered down; ``sweep`` (slurmstack-power.timer) offers
them to Slurm again once their pool's retry is due (``retry``), and terminates instances no node
owns any more.

The seam with the rest of the head's day-2 machinery: the elastic nodes are the CLOUD nodes of
slurm.conf (named ``<pool>-e<k>``, slurmstack.contract.elastic_node_name); everything about them
while they are powered down or powering up or down belongs to these programs. The reaper and any
other controller leave CLOUD nodes alone (the reaper touches only DYNAMIC_NORM records); a health
check may drain a running elastic node like any other, and Slurm then powers it down when idle,
which terminates its instance; the sweep returns it to service with a fresh one.
"""

from .commands import COMMANDS

__all__ = ["COMMANDS"]
