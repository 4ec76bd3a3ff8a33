"""The offline engine: run the real Pulumi program under mocks with AWS-shaped stand-in
outputs and record every resource (for ``slurmstack plan`` and the stack tests)."""

from slurmstack.offline.engine import (
    OfflineRun,
    Options,
    RecordedResource,
    config_for,
    default_program,
    run_definition,
    run_program,
)

__all__ = [
    "OfflineRun",
    "Options",
    "RecordedResource",
    "config_for",
    "default_program",
    "run_definition",
    "run_program",
]
