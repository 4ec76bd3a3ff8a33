"""The people room: the same users, groups and ids on every node (slurmstack.contract's
Identities), their homes, keys and sudo."""

from .commands import COMMANDS

__all__ = ["COMMANDS"]
