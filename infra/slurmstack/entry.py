"""The ``slurmstack`` console script: how the process ends on Ctrl-C, and that it keeps the
bytecode it compiles, are settled before anything else loads (typer, pydantic, then
pulumi_aws: seconds on a busy machine); then the CLI runs."""

from __future__ import annotations

import signal
import sys


def default_interrupt() -> None:
    """Ctrl-C ends the command at once, killed by SIGINT as `cp` or `make` would be: the shell
    shows 130 and a calling script sees an interrupt (a loop over definitions stops), not an
    error. Python's KeyboardInterrupt would instead surface wherever the command happens to
    be, inside an import or inside Pulumi's runtime, which catches it and waits for its
    threads: a hang, or a half-imported module reported as an invalid definition. Where
    SIGINT came ignored (a shell's background job), it stays ignored, as Python leaves it."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def write_bytecode() -> None:
    """Keep the bytecode of what the command imports, also under PYTHONDONTWRITEBYTECODE.

    `plan` loads about 1,000 modules (23 MB of source, mostly pulumi_aws's ec2, s3 and iam).
    Python compiles each on import; where it writes no bytecode (PYTHONDONTWRITEBYTECODE, set
    in many containers and CI machines) it compiles them again on every run, seconds each
    time. An installer could compile everything up front (uv's compile-bytecode: all 7,555
    installed modules, 32 s on a fresh clone, re-checked on every `uv run`); instead the
    command writes bytecode for the modules it uses, the first time it uses them, beside
    them in __pycache__ as Python and pip do. Where that is read-only, Python skips it."""
    sys.dont_write_bytecode = False


def main() -> None:
    default_interrupt()
    write_bytecode()
    from slurmstack.cli import main as cli_main

    cli_main()
