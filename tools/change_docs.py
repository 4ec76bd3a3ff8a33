"""The two generated pages of docs/changing-a-cluster.md, written whole by tools/docs.py: the
change classes and the provider's replacement rules (from the data `plan --against` uses,
infra/slurmstack/change/replacement.json), and what changing each field of a definition does
(from the changes the tests run, tests/change_mutations.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from slurmstack.change.effects import (
    DATA_LOST,
    EFFECT_LABELS,
    EFFECT_MEANING,
    NO_EFFECT_TYPES,
    REPLACE_DISRUPTS,
    REPLACE_RESTARTS_HEAD,
    Effect,
)
from slurmstack.change.replacement import load

REPO = Path(__file__).resolve().parents[1]
MUTATIONS_MODULE = REPO / "tests" / "change_mutations.py"
GROUP = "aws:autoscaling/group:Group"


def when_replaced(type_: str) -> tuple[Effect, str]:
    if type_ == GROUP:
        return Effect.DISRUPTIVE, "every node of the pool terminated"
    if type_ in DATA_LOST:
        return Effect.DISRUPTIVE, f"lost: {DATA_LOST[type_]}"
    if type_ in REPLACE_DISRUPTS:
        return Effect.DISRUPTIVE, REPLACE_DISRUPTS[type_]
    if type_ in REPLACE_RESTARTS_HEAD:
        return Effect.HEAD_RESTART, REPLACE_RESTARTS_HEAD[type_]
    if type_ in NO_EFFECT_TYPES:
        return Effect.NONE, "rebuilt; what uses it says what follows"
    return Effect.LIVE, "made anew"


def _inputs(rules_replace: list[str], conditional: dict[str, list[str]]) -> str:
    parts = [f"`{p}`" for p in rules_replace]
    parts += [f"`{p}` ({', '.join(c)})" for p, c in conditional.items()]
    return ", ".join(parts) or "none"


def classes_page(generated: str) -> str:
    """The classes, then per resource type the inputs that make the provider replace it and
    what a replacement does to the running cluster."""
    data = load()
    lines = [
        generated.rstrip(),
        "",
        "# Change classes and replacement rules",
        "",
        "What [`plan --against`](../changing-a-cluster.md) calls each change, and which inputs "
        "make the provider replace each resource type slurmstack registers.",
        "",
        "| class | what it means |",
        "| --- | --- |",
        *(f"| {EFFECT_LABELS[e]} | {EFFECT_MEANING[e]} |" for e in Effect),
        "",
        f"Replacement rules for pulumi-aws {data.pulumi_aws} and pulumi-random "
        f"{data.pulumi_random} (`infra/slurmstack/change/replacement.json`; each read from the source "
        "named, at the commit named; inputs that source lacks are listed as documented, "
        "classed as the provider documents them):",
        "",
        "| resource type | provider resource | inputs that replace it | when replaced | source |",
        "| --- | --- | --- | --- | --- |",
    ]
    for type_, rules in sorted(data.types.items()):
        effect, what = when_replaced(type_)
        replace = [".".join(r) for r in rules.replace]
        conditional = {".".join(k): list(v) for k, v in rules.replace_when.items()}
        commit = rules.source.get("commit")
        path = rules.source.get("path")
        where = f"{path} @ {commit[:10]}" if commit else f"{path} (not read)"
        if rules.documented:
            where += f"; not in that source, as documented: {', '.join(rules.documented)}"
        lines.append(
            f"| `{type_.split(':')[-1]}` | `{rules.terraform}` | {_inputs(replace, conditional)} "
            f"| {EFFECT_LABELS[effect]}: {what} | {where} |"
        )
    return "\n".join(lines) + "\n"


def _mutations() -> ModuleType:
    """tests/change_mutations.py, read from its file (it is test data, not a package)."""
    if "change_mutations" in sys.modules:  # the tests import it from tests/
        return sys.modules["change_mutations"]
    spec = importlib.util.spec_from_file_location("change_mutations", MUTATIONS_MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def fields_page(generated: str) -> str:
    """Each field of the definition, the change of it the tests run, and the class it gets."""
    table: str = _mutations().field_table()
    return (
        generated.rstrip()
        + "\n\n# What changing each field does\n\n"
        + "The class [`plan --against`](../changing-a-cluster.md) gives a realistic change of "
        + "every field of a definition (the [classes](change-classes.md)); "
        + "tests/stack/test_change_classes.py runs each change on the real program and fails "
        + "when its class differs from this table's. *Ordinary* changes must never replace a "
        + "group, a file system or the state volume.\n\n"
        + table
        + "\n"
    )
