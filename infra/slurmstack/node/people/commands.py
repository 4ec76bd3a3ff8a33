"""The people room's subcommand."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from ...contract import Command
from ..context import Context
from ..subcommand import Subcommand
from .identities import identities


def _identities(ctx: Context, _args: argparse.Namespace) -> int:
    outcome = identities(ctx)
    print(json.dumps(asdict(outcome), sort_keys=True))
    # A problem (an id the node gives someone else) fails the step: the boot stops there
    # rather than start slurmd with a person missing; everything else was applied.
    return 1 if outcome.problems else 0


COMMANDS = (
    Subcommand(
        Command.IDENTITIES,
        "the people of identities.json on this node: groups and users with the definition's "
        "ids (never renumbered), removed or locked people expired and shell-less (files kept), "
        "homes made once 0700, sudo for admins only; login nodes: people's SSH keys, no sudo "
        "for ssm-user, the pool's host key; a directory through SSSD",
        _identities,
    ),
)
