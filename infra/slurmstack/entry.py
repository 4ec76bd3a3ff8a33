"""The ``slurmstack`` console script: how the process ends on Ctrl-C is settled before anything
else loads (typer, pydantic, then pulumi_aws: seconds on a busy machine), then the CLI runs."""

from __future__ import annotations

import signal


def default_interrupt() -> None:
    """Ctrl-C ends the command at once, killed by SIGINT as `cp` or `make` would be: the shell
    shows 130 and a calling script sees an interrupt (a loop over definitions stops), not an
    error. Python's KeyboardInterrupt would instead surface wherever the command happens to
    be, inside an import or inside Pulumi's runtime, which catches it and waits for its
    threads: a hang, or a half-imported module reported as an invalid definition. Where
    SIGINT came ignored (a shell's background job), it stays ignored, as Python leaves it."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def main() -> None:
    default_interrupt()
    from slurmstack.cli import main as cli_main

    cli_main()
