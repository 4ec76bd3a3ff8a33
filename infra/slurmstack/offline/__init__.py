"""The offline engine: run the real Pulumi program under mocks with AWS-shaped stand-in
outputs and record every resource (for ``slurmstack plan`` and the stack tests).

The record of a run (``slurmstack.offline.record``) is pure data; the engine itself
(``slurmstack.offline.engine``) imports Pulumi's runtime, and is imported only when one of
its names is first used, so the report can read runs without loading Pulumi.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from slurmstack.offline.record import OfflineRun, Options, RecordedResource

if TYPE_CHECKING:
    from slurmstack.offline.engine import (
        config_for,
        default_program,
        run_definition,
        run_program,
    )

_ENGINE_NAMES = ("config_for", "default_program", "run_definition", "run_program")


def __getattr__(name: str) -> Any:
    if name in _ENGINE_NAMES or name == "engine":
        engine = importlib.import_module("slurmstack.offline.engine")
        return engine if name == "engine" else getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "OfflineRun",
    "Options",
    "RecordedResource",
    "config_for",
    "default_program",
    "run_definition",
    "run_program",
]
