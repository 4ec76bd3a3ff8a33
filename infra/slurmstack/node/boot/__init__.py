"""How a node becomes itself at boot, in the order the first-boot script and the units run the
steps: its configuration from the config store (``config_sync``), the deploy-time parameters and
its name (``params``; an elastic node's name from its tag, ``elastic``), the munge key
(``munge``), the NVMe scratch (``scratch``), LNet over EFA (``lnet``) and the shared file systems
(``mounts``), and on the head the Slurm state volume (``state_volume``)."""

from .commands import COMMANDS

__all__ = ["COMMANDS"]
