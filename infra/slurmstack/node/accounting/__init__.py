"""Accounting on the head node, in the controller's words: slurmdbd and its database
(``database``), what sacctmgr shows (``sacctmgr``, observe), what to change so the associations
match the definition (``decide``, a pure function), the change made (``apply``, act), and the
usage report from sacct and the pools' prices (``usage``)."""

from .commands import COMMANDS

__all__ = ["COMMANDS"]
