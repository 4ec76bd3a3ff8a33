"""The ``slurmstack`` command line.

Exit codes: 0 ok; 1 invalid definition (every finding printed as ``path: message``);
2 usage error. ``validate``, ``schema`` and ``render`` never import pulumi; ``plan`` and
``diagram`` import it only when they run.
"""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn, TextIO

import typer

from slurmstack.findings import Finding, Level

app = typer.Typer(
    name="slurmstack",
    help="An AI training cluster on AWS as code: validate, render and plan a cluster definition.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DefinitionFile = Annotated[
    Path,
    typer.Argument(
        exists=True,
        dir_okay=False,
        readable=True,
        help="Cluster definition (YAML or JSON), or a Pulumi.<stack>.yaml holding it under "
        "config: slurmstack:cluster.",
    ),
]

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def _print_findings(findings: list[Finding], stream: TextIO | None = None) -> None:
    """Errors to stderr; warnings to ``stream`` (stdout unless the command's stdout is data)."""
    for finding in findings:
        out = sys.stderr if finding.level is Level.ERROR else (stream or sys.stdout)
        print(finding.line(), file=out)


def _validated_or_exit(file: Path):  # type: ignore[no-untyped-def]
    from slurmstack.validate import validate_file

    result = validate_file(file)
    if not result.ok:
        _print_findings(result.findings, sys.stderr)
        errors = sum(1 for f in result.findings if f.level is Level.ERROR)
        print(f"{file}: invalid ({errors} error{'s' if errors != 1 else ''})", file=sys.stderr)
        raise typer.Exit(EXIT_INVALID)
    return result


def summary_line(spec) -> str:  # type: ignore[no-untyped-def]
    """'llm-train: 18 nodes in 2 pools, 136 accelerators (128 H100, 8 L40S), head node ...'."""
    from slurmstack.plan import build_plan
    from slurmstack.report.capacity import cluster_capacity

    plan = build_plan(spec)
    capacity = cluster_capacity(plan)
    models = ", ".join(f"{n} {m}" for m, n in sorted(capacity.accelerators_by_model.items()))
    pools = len(plan.pools)
    text = (
        f"{plan.name}: {capacity.nodes} nodes in {pools} pool{'s' if pools != 1 else ''}, "
        f"{capacity.accelerators} accelerators"
    )
    if models:
        text += f" ({models})"
    return text + f", head node {plan.head.instance_type}, region {plan.region}"


@app.command()
def validate(file: DefinitionFile) -> None:
    """Check a definition; print every finding as `path: message`."""
    result = _validated_or_exit(file)
    _print_findings(result.findings)  # warnings only, at this point
    print(f"valid: {summary_line(result.spec)}")


@app.command()
def schema() -> None:
    """Print the JSON Schema of the definition (for editors and yaml-language-server)."""
    from slurmstack.schema import definition_schema

    print(json.dumps(definition_schema(), indent=2))


@app.command()
def render(
    file: DefinitionFile,
    out: Annotated[Path, typer.Option("--out", help="Directory to write the files into.")],
) -> None:
    """Write every file a node would receive, laid out by where it lands. A render into a
    directory of an earlier one removes the files that one wrote and this one does not."""
    from slurmstack.plan import build_plan
    from slurmstack.render import render_cluster
    from slurmstack.rendered_dir import MANIFEST, OutputError, write_rendered

    if out.exists() and not out.is_dir():
        _usage_error(f"--out {out} is an existing file; give a directory to write into")
    result = _validated_or_exit(file)
    _print_findings(result.findings, sys.stderr)
    try:
        written = write_rendered(render_cluster(build_plan(result.spec)), out)
    except OutputError as exc:
        _usage_error(str(exc))
    for rel in written.removed:
        print(f"removed {out / rel} (written by an earlier render, not by this one)")
    for rel in written.kept:
        print(
            f"kept {out / rel}: an earlier render wrote it, but it was changed since; "
            "delete it yourself if it is not needed",
            file=sys.stderr,
        )
    print(f"wrote {written.written} files to {out} (list in {out / MANIFEST})")


def _usage_error(message: str) -> NoReturn:
    print(f"slurmstack: {message}", file=sys.stderr)
    raise typer.Exit(EXIT_USAGE)


@app.command()
def plan(
    file: DefinitionFile,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Run the Pulumi program offline: resources, capacity, storage, cost, time to ready."""
    from slurmstack.collector import pause_for_program

    # Paused from here to exit (not only for the run): resuming it after the run would
    # start with one collection over every object the run left alive.
    pause_for_program()
    from slurmstack.offline.engine import run_definition
    from slurmstack.plan import build_plan
    from slurmstack.report.plan_report import build_report

    result = _validated_or_exit(file)
    run = run_definition(result.definition)
    if not run.ok:
        for line in run.error_lines():
            print(line, file=sys.stderr)
        raise typer.Exit(EXIT_INVALID)
    document = build_report(build_plan(result.spec), run, result.findings).to_dict()
    if as_json:
        print(json.dumps(document, indent=2))
        return
    from rich.console import Console

    from slurmstack.report.console import print_plan

    print_plan(document, Console())


@app.command()
def catalog(
    region: Annotated[
        str | None, typer.Option("--region", help="Only the types offered in this Region.")
    ] = None,
    accelerators: Annotated[
        bool, typer.Option("--accelerators", help="Only types with GPUs or Trainium.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
) -> None:
    """List the instance types slurmstack knows: facts, purchase options, prices, Regions."""
    from rich.console import Console

    from slurmstack.catalog import did_you_mean, load_catalog
    from slurmstack.report.catalog_list import (
        Selection,
        catalog_document,
        catalog_grid,
        selected,
        sources_used,
    )
    from slurmstack.report.tables import print_grid

    known = load_catalog()
    if region is not None and region not in known.regions:
        hint = did_you_mean(known.suggest(region, sorted(known.regions)))
        _usage_error(
            f"--region {region!r} is not a Region slurmstack knows{hint}; "
            f"it knows {', '.join(sorted(known.regions))}"
        )
    selection = Selection(region=region, accelerators_only=accelerators)
    if as_json:
        print(json.dumps(catalog_document(known, selection), indent=2))
        return
    console = Console()
    print_grid(catalog_grid(known, selection), console)
    console.print("sources:")
    for line in sources_used(known, selected(known, selection)):
        console.print(f" - {line}", soft_wrap=True, markup=False, highlight=False)


class DiagramFormat(enum.StrEnum):
    mermaid = "mermaid"
    dot = "dot"


@app.command()
def diagram(
    file: DefinitionFile,
    format: Annotated[
        DiagramFormat,
        typer.Option("--format", help="mermaid (renders on GitHub) or dot (Graphviz)."),
    ] = DiagramFormat.mermaid,
) -> None:
    """Print a diagram of head node, pools, storage tiers and network."""
    from slurmstack.plan import build_plan
    from slurmstack.report import diagram as diagrams

    result = _validated_or_exit(file)
    plan = build_plan(result.spec)
    print(diagrams.mermaid(plan) if format is DiagramFormat.mermaid else diagrams.dot(plan), end="")


@app.command("ssh-config")
def ssh_config_command(
    user: Annotated[str, typer.Option("--user", help="Your login name on the cluster.")],
    outputs: Annotated[
        Path | None,
        typer.Option(
            "--outputs",
            dir_okay=False,
            help="The stack's outputs as `pulumi stack output --json` prints them (default: "
            "standard input).",
        ),
    ] = None,
    identity_file: Annotated[
        str,
        typer.Option("--identity-file", help="Your private key (its .pub is in users[].ssh_keys)."),
    ] = "~/.ssh/id_ed25519",
) -> None:
    """Print a ~/.ssh/config block for the login pools: SSH through Session Manager."""
    from slurmstack.ssh_config import OutputsError, ssh_config

    try:
        text = outputs.read_text() if outputs is not None else sys.stdin.read()
        document = json.loads(text)
        if not isinstance(document, dict):
            raise OutputsError("expected the JSON object `pulumi stack output --json` prints")
        print(ssh_config(document, user, identity_file), end="")
    except (OSError, json.JSONDecodeError, OutputsError) as exc:
        _usage_error(f"ssh-config: {exc}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
