"""The ``slurmstack`` command line.

Exit codes: 0 ok; 1 invalid definition (every finding printed as ``path: message``);
2 usage error; 3 `plan --against --fail-on CLASS` found a change of that class or worse;
74 the output could not be written; 141 the output's reader left (a closed pipe); killed by
SIGINT on Ctrl-C (the shell shows 130). ``validate``, ``schema`` and ``render`` never import
pulumi; ``plan`` and ``diagram`` import it only when they run.
"""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn, TextIO

import typer

import slurmstack
from slurmstack.cli_output import Commands, flushed
from slurmstack.entry import default_interrupt, write_bytecode
from slurmstack.findings import Finding, Level, findings_document

app = typer.Typer(
    name="slurmstack",
    help="An AI training cluster on AWS as code: validate, render and plan a cluster definition.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=Commands,
    # Plain help: flags read as flags (rich help shows `--json <bool>`), text wraps at the
    # terminal's width, and it pipes into grep or a file unboxed.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

DefinitionFile = Annotated[
    Path,
    typer.Argument(
        metavar="FILE",
        exists=True,
        dir_okay=False,
        readable=True,
        help="Cluster definition (YAML or JSON), or a Pulumi.<stack>.yaml holding it under "
        "config: slurmstack:cluster.",
    ),
]

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def version_line() -> str:
    """'slurmstack 0.1.0 (pulumi 3.272.0, pulumi-aws 7.51.1, Python 3.11.7)': what a bug
    report needs, read from the installed distributions (no import of Pulumi)."""
    from importlib import metadata

    def installed(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    python = ".".join(str(part) for part in sys.version_info[:3])
    return (
        f"slurmstack {slurmstack.__version__} (pulumi {installed('pulumi')}, "
        f"pulumi-aws {installed('pulumi-aws')}, Python {python})"
    )


def _print_version(value: bool) -> None:
    if value:
        print(version_line())
        raise typer.Exit(EXIT_OK)


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print slurmstack's version (and Pulumi's and Python's) and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    pass


def _print_findings(findings: list[Finding], stream: TextIO | None = None) -> None:
    """Errors to stderr; warnings to ``stream`` (stdout unless the command's stdout is data)."""
    for finding in findings:
        out = sys.stderr if finding.level is Level.ERROR else (stream or sys.stdout)
        print(finding.line(), file=out)


def _print_json(document: object) -> None:
    print(json.dumps(document, indent=2))


def _validated_or_exit(file: Path, as_json: bool = False):  # type: ignore[no-untyped-def]
    """The validated definition; else every error on stderr, as one line each (and, for
    ``--json``, the findings as a JSON document on stdout, so a pipeline sees it fail), and
    exit 1."""
    from slurmstack.validate import validate_file

    result = validate_file(file)
    if not result.ok:
        if as_json:
            _print_json(findings_document(str(file), result.findings))
        _print_findings(result.findings, sys.stderr)
        errors = sum(1 for f in result.findings if f.level is Level.ERROR)
        print(f"{file}: invalid ({errors} error{'s' if errors != 1 else ''})", file=sys.stderr)
        raise typer.Exit(EXIT_INVALID)
    return result


def summary_document(spec) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """What the summary line says, as data."""
    from slurmstack.plan import build_plan
    from slurmstack.report.capacity import cluster_capacity

    plan = build_plan(spec)
    capacity = cluster_capacity(plan)
    return {
        "cluster": plan.name,
        "region": plan.region,
        "nodes": capacity.nodes,
        "pools": len(plan.pools),
        "accelerators": capacity.accelerators,
        "accelerators_by_model": dict(sorted(capacity.accelerators_by_model.items())),
        "head_instance_type": plan.head.instance_type,
    }


def summary_line(spec) -> str:  # type: ignore[no-untyped-def]
    """'llm-train: 18 nodes in 2 pools, 136 accelerators (128 H100, 8 L40S), head node ...'."""
    facts = summary_document(spec)
    by_model = facts["accelerators_by_model"]
    assert isinstance(by_model, dict)
    models = ", ".join(f"{n} {m}" for m, n in by_model.items())
    pools = facts["pools"]
    text = (
        f"{facts['cluster']}: {facts['nodes']} nodes in {pools} pool{'s' if pools != 1 else ''}, "
        f"{facts['accelerators']} accelerators"
    )
    if models:
        text += f" ({models})"
    return text + f", head node {facts['head_instance_type']}, region {facts['region']}"


@app.command(short_help="Check a definition; print every finding as `path: message`.")
def validate(
    file: DefinitionFile,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print the findings, and a summary when valid, as one JSON document."
        ),
    ] = False,
) -> None:
    """Check a definition; print every finding as `path: message` (errors on stderr), then a
    one-line summary. Exit 1 when it is invalid."""
    result = _validated_or_exit(file, as_json)
    if as_json:
        _print_json(
            findings_document(str(file), result.findings, summary=summary_document(result.spec))
        )
        return
    _print_findings(result.findings)  # warnings only, at this point
    print(f"valid: {summary_line(result.spec)}")


@app.command(short_help="Print the JSON Schema of the definition (for editors).")
def schema() -> None:
    """Print the JSON Schema of the definition (for editors and yaml-language-server)."""
    from slurmstack.schema import definition_schema

    print(json.dumps(definition_schema(), indent=2))


@app.command(short_help="Write every file a node receives, laid out by where it lands.")
def render(
    file: DefinitionFile,
    out: Annotated[Path, typer.Option("--out", help="Directory to write the files into.")],
) -> None:
    """Write every file a node receives, laid out by where it lands. A render into a
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


class FailOn(enum.StrEnum):
    live = "live"
    rolling = "rolling"
    head_restart = "head-restart"
    disruptive = "disruptive"


EXIT_CHANGE_REFUSED = 3  # `plan --against --fail-on`: the change reaches the class given


@app.command(short_help="Run the Pulumi program offline: resources, cost, time to ready.")
def plan(
    file: DefinitionFile,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the report as JSON (for an invalid definition: its findings, exit 1).",
        ),
    ] = False,
    against: Annotated[
        Path | None,
        typer.Option(
            "--against",
            exists=True,
            dir_okay=False,
            readable=True,
            help="What runs now: a definition, a Pulumi.<stack>.yaml or a saved `plan --json`. "
            "Lists what FILE would create, update, replace or delete, and what that does to "
            "the running cluster.",
        ),
    ] = None,
    fail_on: Annotated[
        FailOn | None,
        typer.Option(
            "--fail-on",
            help=f"With --against: exit {EXIT_CHANGE_REFUSED} when a change reaches this class "
            "(e.g. disruptive, for a CI pipeline).",
        ),
    ] = None,
) -> None:
    """Run the Pulumi program offline: resources, capacity, storage, cost, time to ready."""
    from slurmstack.collector import pause_for_program

    # Before Pulumi loads (seconds): an invalid definition is refused at once.
    result = _validated_or_exit(file, as_json)
    # Paused from here to exit (not only for the run): resuming it after the run would
    # start with one collection over every object the run left alive.
    pause_for_program()
    from slurmstack.offline.engine import run_definition
    from slurmstack.plan import build_plan
    from slurmstack.report.plan_report import build_report

    run = run_definition(result.definition)
    if not run.ok:
        if as_json:
            refused = [Finding("", line, rule="program") for line in run.error_lines()]
            _print_json(findings_document(str(file), [*result.findings, *refused]))
        for line in run.error_lines():
            print(line, file=sys.stderr)
        raise typer.Exit(EXIT_INVALID)
    document = build_report(build_plan(result.spec), run, result.findings).to_dict()
    if against is not None:
        _plan_against(against, result.spec, run, document, as_json, fail_on)
        return
    if fail_on is not None:
        _usage_error("--fail-on needs --against OLD: it compares a change")
    if as_json:
        _print_json(document)
        return
    from slurmstack.cli_output import output_console
    from slurmstack.report.console import print_plan

    print_plan(document, output_console())


def _plan_against(  # type: ignore[no-untyped-def]
    against: Path, spec, run, document: dict[str, object], as_json: bool, fail_on: FailOn | None
) -> None:
    """`plan FILE --against OLD`: the change plan, added to --json as `changes`."""
    from slurmstack.change.effects import Context, Effect
    from slurmstack.change.plan import change_plan
    from slurmstack.change.releases import release_findings
    from slurmstack.change.snapshot import from_run
    from slurmstack.change.sources import OldDeploymentError, old_releases, old_snapshot
    from slurmstack.findings import Level

    try:
        old = old_snapshot(against)
    except OldDeploymentError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        raise typer.Exit(EXIT_INVALID) from None
    context = Context(scale_in_wait_minutes=spec.health.scale_in_wait_minutes)
    changes = change_plan(old, from_run(run, spec.name), against=str(against), context=context)
    changes_doc = changes.to_dict()
    # Slurm's releases: a change of them refused (back, or past the compatibility window),
    # or settings an older slurmd would meet before its refresh (slurmstack.change.releases).
    releases = old_releases(against)
    slurm = [] if releases is None else release_findings(releases, spec)
    changes_doc["slurm"] = [f.line() for f in slurm]
    if as_json:
        _print_json({**document, "changes": changes_doc})
    else:
        from slurmstack.cli_output import output_console
        from slurmstack.report.changes import print_changes

        print_changes(changes_doc, output_console())
        for finding in slurm:
            print(finding.line())
    if any(f.level is Level.ERROR for f in slurm):
        print(f"{against} (--against): the change of Slurm's release is refused", file=sys.stderr)
        raise typer.Exit(EXIT_INVALID)
    if fail_on is not None and changes.reaches(Effect(fail_on.value)):
        print(
            f"slurmstack: the change is {changes.worst.value}, at or above --fail-on {fail_on.value}",
            file=sys.stderr,
        )
        raise typer.Exit(EXIT_CHANGE_REFUSED)


@app.command(short_help="Read a deployed cluster: nodes, breakers, repairs, alerts.")
def status(
    file: DefinitionFile,
    as_json: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False,
) -> None:
    """Read a deployed cluster from AWS: head, pools' nodes, breakers, repairs, alert topic."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from slurmstack.plan import build_plan
    from slurmstack.status import cluster_status, status_lines

    plan = build_plan(_validated_or_exit(file).spec)
    try:
        found = cluster_status(plan, boto3.Session())
    except (BotoCoreError, ClientError) as error:
        print(
            f"{file}: could not read {plan.name} from AWS ({plan.region}): {error}", file=sys.stderr
        )
        raise typer.Exit(EXIT_INVALID) from None
    if as_json:
        _print_json(found.to_dict())
        return
    print("\n".join(status_lines(found)))


@app.command(short_help="Read one node's logs from CloudWatch Logs.")
def logs(
    file: DefinitionFile,
    node: Annotated[
        str,
        typer.Argument(
            metavar="NODE", help="A Slurm node name (sinfo -N), 'head', or an instance id."
        ),
    ],
    source: Annotated[
        list[str] | None,
        typer.Option(
            "--source",
            help="Only these logs (repeatable): "
            "slurmctld, slurmdbd, slurmd, agent, health-check. Default: all.",
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="From an age ago (30s, 10m, 2h, 1d) or a time (ISO 8601)."),
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new lines (Ctrl-C stops).")
    ] = False,
) -> None:
    """Print a node's logs (Slurm's, the agent's, the health checks'), oldest first, from the
    cluster's CloudWatch Logs groups, where every node's log shipper writes them."""
    import time

    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from slurmstack.contract import LogSource
    from slurmstack.node_logs import LogsError, node_logs, since_millis
    from slurmstack.plan import build_plan

    plan = build_plan(_validated_or_exit(file).spec)
    known = [s.value for s in LogSource]
    unknown = [s for s in source or [] if s not in known]
    try:
        if unknown:
            raise LogsError(f"--source {unknown[0]!r}: not one of {', '.join(known)}")
        sources = [LogSource(s) for s in source] if source else list(LogSource)
        start = since_millis(since, time.time()) if since else None
        for event in node_logs(
            boto3.Session(), plan, node, sources, start, follow=follow, sleep=time.sleep
        ):
            print(event.line(), flush=follow)
    except LogsError as error:
        print(f"{file}: {error}", file=sys.stderr)
        raise typer.Exit(EXIT_INVALID) from None
    except (BotoCoreError, ClientError) as error:
        print(
            f"{file}: could not read {plan.name}'s logs from AWS ({plan.region}): {error}",
            file=sys.stderr,
        )
        raise typer.Exit(EXIT_INVALID) from None


@app.command(short_help="List the instance types slurmstack knows, with facts and prices.")
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
    from slurmstack.catalog import did_you_mean, load_catalog
    from slurmstack.cli_output import output_console
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
    console = output_console()
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
    """Print a diagram: head node, pools, storage and network."""
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
            help="The stack's outputs in JSON, from `pulumi stack output` (default: standard "
            "input).",
        ),
    ] = None,
    identity_file: Annotated[
        str,
        typer.Option("--identity-file", help="Your private key (its .pub is in users[].ssh_keys)."),
    ] = "~/.ssh/id_ed25519",
) -> None:
    """Print a ~/.ssh/config block for the login pools.

    SSH through Session Manager (AWS-StartSSHSession) with your own key, or directly through a
    pool's load balancer."""
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
    default_interrupt()  # again, for `python -m slurmstack.cli`
    write_bytecode()
    try:
        app()
    except SystemExit as done:
        sys.exit(flushed(done.code))


if __name__ == "__main__":
    main()
