"""The Pulumi stack: one ComponentResource per role and resource family, composed by
``SlurmCluster``. Importing this package imports nothing of Pulumi: the pure helpers
(``slurmstack.stack.common``, ``slurmstack.stack.policies``) load alone, and ``SlurmCluster``
and ``export_outputs`` import pulumi and the pulumi_aws submodules they use when first named."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slurmstack.stack.cluster import SlurmCluster
    from slurmstack.stack.outputs import export_outputs

_LAZY = {"SlurmCluster": "slurmstack.stack.cluster", "export_outputs": "slurmstack.stack.outputs"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["SlurmCluster", "export_outputs"]
