"""Jobs, containers and acceptance on the nodes: the per-node check a job runs
(``node_check``), nccl-tests' output as a verdict (``nccl_tests``), the search for a slow node
or pair (``pairs``), the acceptance run of every pool (``accept``, run by users on the head),
the directories containers and checkpoints need (``job_dirs``) and pulls from the account's ECR
(``ecr``). ``commands`` holds their subcommands."""

from .commands import COMMANDS

__all__ = ["COMMANDS"]
