"""The node agent's Node: the core (NodeBase) with every concern's steps."""

from __future__ import annotations

from .config_sync import ConfigSync
from .health import Health
from .mounts import Mounts
from .munge import Munge
from .params import Params
from .reaper import Reaper
from .scratch import Scratch
from .state_volume import StateVolume
from .usage import Usage


class Node(ConfigSync, Params, Munge, Health, Scratch, Mounts, StateVolume, Reaper, Usage):
    """The node as the agent sees it, with every subcommand's step. Everything external is
    injectable for tests (see NodeBase)."""
