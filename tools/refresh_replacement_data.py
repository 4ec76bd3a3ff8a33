"""Rewrite infra/slurmstack/change/replacement.json from the provider's sources, when
pulumi-aws (or pulumi-random) is bumped in uv.lock.

The sources are laid out from local git directories of the repositories (clones or
mirrors) under /var/cache/slurmstack/provider-src, never in this repository:

    D=/var/cache/slurmstack/provider-src
    # the terraform-provider-aws commit pulumi-aws bridges: pulumi-aws's `upstream`
    # submodule at tag v<version>, plus its patches/*.patch that touch ForceNew
    git clone -q --shared --no-checkout <terraform-provider-aws git dir> $D/terraform-provider-aws
    git -C $D/terraform-provider-aws checkout -q <commit>     # then: git apply <patches>
    # terraform-provider-random: the version pulumi-random's provider/go.mod requires
    git clone -q --shared --no-checkout <terraform-provider-random git dir> $D/terraform-provider-random
    git -C $D/terraform-provider-random checkout -q <commit>
    # the bridges' own overrides: provider/resources.go of each
    git clone -q --shared --no-checkout <pulumi-random git dir> $D/pulumi-random
    git -C $D/pulumi-random checkout -q <tag> -- provider/resources.go   # likewise pulumi-aws,
    # whose overrides live in provider/resource_overrides.go and autonaming.go since v7; a
    # directory holding only those files (provider/...) serves as --pulumi-aws
    uv run --frozen python tools/refresh_replacement_data.py \\
        --terraform-aws $D/terraform-provider-aws --terraform-random $D/terraform-provider-random \\
        --pulumi-aws $D/pulumi-aws --pulumi-random $D/pulumi-random --provenance provenance.json
    uv run --frozen python tools/docs.py   # the reference pages made from the data

For every resource type in the data file it finds the Terraform resource's source file (its
``@SDKResource``/``@FrameworkResource`` annotation, or a plugin-framework ``Metadata`` that
sets the type name), reads which attributes force a replacement (``ForceNew: true``;
``RequiresReplace()`` plan modifiers; ``ForceNew``/``ForceNewIf``/``ForceNewIfChange`` in a
CustomizeDiff, as conditions), adds the bridge's own overrides (``ForceNew: tfbridge.True()``
fields, ``DeleteBeforeReplace`` and auto-named fields in provider/resources.go, or, from
pulumi-aws 7 on, provider/resource_overrides.go and autonaming.go), maps Terraform names to the
Pulumi input names of the installed SDK, and records the source file with the checkout's
commit and its date. The versions written are uv.lock's; the test in
tests/unit/change/test_replacement_data.py fails until they match.

Go is parsed by brace matching, not compiled. What it cannot map it prints, and never
guesses: a schema built by a helper it cannot resolve, a ModifyPlan that computes its
RequiresReplace paths, a Terraform argument the SDK lacks, and an SDK input the source read
does not declare (a source older than the bridged one). Such an input keeps the class the
data already had for it, marked ``documented``, or is listed ``unclassified``. It exits 1
only when a type has no source file or a source attribute has no SDK input.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "infra" / "slurmstack" / "change" / "replacement.json"
ANNOTATION = re.compile(r'@(?:SDK|Framework)Resource\("(?P<name>[a-z0-9_]+)"')
# A plugin-framework resource may name itself only in its Metadata method, and
# terraform-provider-random builds the name from the provider's ("random" + "_id").
TYPE_NAME = re.compile(r'\.TypeName\s*=\s*"(?P<name>[a-z0-9_]+)"')
SUFFIX_NAME = re.compile(r'\.TypeName\s*=\s*req\.ProviderTypeName\s*\+\s*"(?P<suffix>_[a-z0-9_]+)"')
# A ModifyPlan that sets RequiresReplace to paths it computes at run time: not mappable here.
DYNAMIC_REPLACE = re.compile(r"\.RequiresReplace\s*=\s*")
EMBEDDED = re.compile(r"^type (?P<outer>\w+) struct \{\s*\n\s*(?P<inner>\w+)\s*\n", re.M)
KEY = re.compile(
    r'^\s*(?:"(?P<quoted>[a-z0-9_]+)"|names\.(?P<const>Attr[A-Za-z0-9]+)'
    r"|(?P<local>[a-z][A-Za-z0-9]*))\s*:\s*",
    re.M,
)
LOCAL = "\0local "  # marks a key that is a package constant (routeDestinationCIDRBlock)


def snake_of_constant(const: str) -> str:
    """names.AttrKMSKeyID -> kms_key_id, names.AttrSecurityGroupIDs -> security_group_ids."""
    word = const.removeprefix("Attr").replace("IDs", "Ids")
    word = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", word)
    return re.sub(r"([a-z\d])([A-Z])", r"\1_\2", word).lower()


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def strip_comments(text: str) -> str:
    """Go source without its // comments (a flag named in a comment is no flag)."""
    out, i, quote = [], 0, ""
    while i < len(text):
        ch = text[i]
        if quote:
            out.append(ch)
            if ch == "\\" and quote != "`":
                out.append(text[i + 1 : i + 2])
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
            out.append(ch)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def block_at(text: str, open_index: int) -> str:
    """The text inside the braces opening at ``open_index`` (strings and comments skipped)."""
    depth, i, quote = 0, open_index, ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote != "`":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
        elif text.startswith("//", i):
            i = text.find("\n", i)
            if i < 0:
                break
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[open_index + 1 : i]
        i += 1
    raise ValueError("unbalanced braces")


VALUE_BLOCK = re.compile(r"(?:&?schema\.\w+)?\{")
CALL = re.compile(r"(?P<function>[A-Za-z_][\w.]*)\(")
CALLED = "\0call "  # marks an entry whose schema a function call returns
VARIABLE = re.compile(r"(?P<name>[A-Za-z_]\w*)\s*,")
NAMED = "\0var "  # marks an entry whose schema a package variable holds
# Calls of the provider's shared helpers whose flags their names say: the tags map (an
# input updated in place), and computed-only attributes (outputs).
PLAIN_INPUT_CALLS = {"tftags.TagsSchema", "tftags.TagsSchemaComputed", "tftags.TagsAttribute"}


def paren_end(text: str, open_index: int) -> int:
    depth, i = 0, open_index
    while i < len(text):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced parentheses")


def entries(body: str) -> dict[str, str]:
    """Top-level entries of a schema map: ``key: {...}``, ``key: schema.XAttribute{...}``,
    or ``key: someSchema()`` (kept as the call, marked, for the caller to resolve)."""
    found: dict[str, str] = {}
    depth, i = 0, 0
    while i < len(body):
        if body[i] in "{":
            depth += 1
        elif body[i] == "}":
            depth -= 1
        elif depth == 0:
            match = KEY.match(body, i) if (i == 0 or body[i - 1] == "\n") else None
            if match:
                name = (
                    match["quoted"]
                    or (match["const"] and snake_of_constant(match["const"]))
                    or LOCAL + match["local"]
                )
                value = VALUE_BLOCK.match(body, match.end())
                variable = VARIABLE.match(body, match.end())
                call = CALL.match(body, match.end())
                if value:
                    brace = value.end() - 1
                    inner = block_at(body, brace)
                    found[name] = inner
                    i = brace + len(inner) + 2
                    continue
                if call:
                    end = paren_end(body, call.end() - 1)
                    found[name] = CALLED + body[match.end() : end]
                    i = end
                    continue
                if variable:
                    found[name] = NAMED + variable["name"]
                    i = variable.end()
                    continue
        i += 1
    return found


def own_level(entry: str) -> str:
    """An entry's text without its nested blocks (Elem, NestedObject): its own flags."""
    out, depth = [], 0
    for ch in entry:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def nested_schema(entry: str) -> str | None:
    for marker in (
        "Schema: map[string]*schema.Schema{",
        "Attributes: map[string]schema.Attribute{",
    ):
        at = entry.find(marker)
        if at >= 0:
            return block_at(entry, at + len(marker) - 1)
    return None


@dataclass
class Found:
    replace: list[str] = field(default_factory=list)
    replace_when: dict[str, list[str]] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)


# Plan modifiers that replace on any change of a configured value: RequiresReplace(),
# RequiresReplaceIfConfigured(), and random's RequiresReplaceIfValuesNotNull() (keepers).
ALWAYS_REPLACES = re.compile(r"\bRequiresReplace(?:IfConfigured|IfValuesNotNull)?\(\)")


def called_schema(call: str, package: dict[str, str]) -> str | None:
    """The schema a same-package function returns (``return &schema.Schema{...}``)."""
    function = call.split("(", 1)[0]
    for text in package.values():
        at = text.find(f"\nfunc {function}(")
        if at < 0:
            continue
        ret = text.find("return &schema.Schema{", at)
        if ret >= 0:
            return block_at(text, ret + len("return &schema.Schema{") - 1)
    return None


def package_constant(name: str, package: dict[str, str]) -> str | None:
    pattern = re.compile(rf'^\s*{name}\s*=\s*"(?P<value>[a-z0-9_]+)"', re.M)
    for text in package.values():
        match = pattern.search(text)
        if match:
            return match["value"]
    return None


def package_variable(name: str, package: dict[str, str]) -> str | None:
    pattern = re.compile(rf"^\s*(?:var\s+)?{name}\s*=\s*&schema\.Schema\{{", re.M)
    for text in package.values():
        match = pattern.search(text)
        if match:
            return block_at(text, match.end() - 1)
    return None


# Terraform arguments the bridge exposes as outputs only: pulumi-aws 7 computes tags_all
# from the provider's default tags and takes no input for it.
BRIDGE_OUTPUTS = {"tags_all"}


def walk(schema_body: str, prefix: str, found: Found, package: dict[str, str]) -> None:
    for key, entry in entries(schema_body).items():
        name = key
        if key.startswith(LOCAL):
            constant = key.removeprefix(LOCAL)
            name = package_constant(constant, package) or ""
            if not name:
                found.unmapped.append(
                    f"{prefix}{constant} names an attribute by a constant not found"
                )
                continue
        path = f"{prefix}{name}"
        if entry.startswith(NAMED):
            variable = entry.removeprefix(NAMED)
            held = package_variable(variable, package)
            if held is None:
                found.unmapped.append(f"{path} is the schema held by {variable}, not found")
                continue
            entry = held
        if entry.startswith(CALLED):
            call = entry.removeprefix(CALLED)
            function = call.split("(", 1)[0]
            if not prefix and name in BRIDGE_OUTPUTS:
                continue
            if "ForceNew" in function:  # tftags.TagsSchemaForceNew()
                found.inputs.append(name) if not prefix else None
                found.replace.append(path)
                continue
            if function.endswith("ComputedOnly") or function == "framework.IDAttribute":
                continue  # an output only
            if function in PLAIN_INPUT_CALLS:
                found.inputs.append(name) if not prefix else None
                continue
            resolved = called_schema(call, package)
            if resolved is None:
                found.unmapped.append(f"{path} is built by {function}(), not read")
                continue
            entry = resolved
        flags = own_level(entry)
        if re.search(r"\bComputed:\s*true", flags) and not re.search(
            r"\b(Optional|Required):\s*true", flags
        ):
            continue  # an output only
        if not prefix and name in BRIDGE_OUTPUTS:
            continue
        if not prefix:
            found.inputs.append(name)
        if re.search(r"\bForceNew:\s*true", flags) or ALWAYS_REPLACES.search(
            entry.split("Elem:")[0]
        ):
            found.replace.append(path)
        elif "RequiresReplaceIf" in flags:
            found.replace_when.setdefault(path, []).append("provider condition")
        nested = nested_schema(entry)
        if nested is not None:
            walk(nested, f"{path}.", found, package)


BOOL_CONDITION = re.compile(r'\s*return\s+\w+\.Get\("([a-z0-9_]+)"\)\.\(bool\)\s*\}')


def customize_diff(source: str, found: Found) -> None:
    for match in re.finditer(r'ForceNewIfChange\("([a-z0-9_.]+)"', source):
        window = source[match.end() : match.end() + 400]
        condition = "decrease" if re.search(r"new[^<>\n]*<\s*old", window) else "provider condition"
        found.replace_when.setdefault(match[1], []).append(condition)
    for match in re.finditer(r'customdiff\.ForceNewIf\("([a-z0-9_.]+)"', source):
        # "return diff.Get("user_data_replace_on_change").(bool)": replaced while that input
        # is true, which the plan can check; any other condition is the provider's own.
        body = re.compile(r"\)\s*bool\s*\{").search(source, match.end())
        flag = BOOL_CONDITION.match(source, body.end()) if body else None
        condition = f"{camel(flag[1])}=True" if flag else "provider condition"
        found.replace_when.setdefault(match[1], []).append(condition)
    for match in re.finditer(r'\.ForceNew\("([a-z0-9_.]+)"\)', source):
        window = source[max(0, match.start() - 600) : match.start()]
        condition = (
            "decrease" if re.search(r"n(ew)?[^<>\n]*<\s*o(ld)?", window) else "provider condition"
        )
        found.replace_when.setdefault(match[1].replace(".0.", "."), []).append(condition)
        # "n < o || d.Get("deployment_type") == ...": a second condition, not mapped to a
        # value here, so named for the reader rather than dropped.
        for other in re.finditer(r'\|\|\s*d\.Get\("([a-z0-9_]+)"\)', window[-300:]):
            found.replace_when[match[1].replace(".0.", ".")].append(
                f"provider condition on {other[1]}"
            )


SCHEMA_MARKERS = (
    "Schema: map[string]*schema.Schema{",
    "return map[string]*schema.Schema{",
    "Attributes: map[string]schema.Attribute{",
)


def has_schema(source: str) -> bool:
    return any(marker in source for marker in SCHEMA_MARKERS)


def read_resource(source: str, package: dict[str, str] | None = None) -> Found:
    """What one resource's source says; ``package`` (file name -> text, comments stripped)
    resolves schemas that same-package functions return."""
    source = strip_comments(source)
    found = Found()
    for marker in SCHEMA_MARKERS:
        at = source.find(marker)
        if at >= 0:
            walk(block_at(source, at + len(marker) - 1), "", found, package or {})
            break
    customize_diff(source, found)
    if DYNAMIC_REPLACE.search(source):
        found.unmapped.append("a ModifyPlan sets RequiresReplace on paths it computes at run time")
    return found


def schema_source(path: Path) -> Path:
    """The file holding a resource's schema: its own, or (a plugin-framework resource that
    embeds another, as the egress rule embeds the shared security group rule) the file in
    the same package defining the embedded type's Schema method."""
    text = path.read_text(errors="replace")
    if has_schema(text):
        return path
    for match in EMBEDDED.finditer(text):
        method = re.compile(rf"^func \(\w+ \*{match['inner']}\) Schema\(", re.M)
        for sibling in sorted(path.parent.glob("*.go")):
            if not sibling.name.endswith("_test.go") and method.search(sibling.read_text()):
                return sibling
    return path


def terraform_files(checkout: Path, prefix: str = "aws") -> dict[str, Path]:
    """Terraform resource name -> the Go file declaring it (annotation or Metadata)."""
    files: dict[str, Path] = {}
    for path in (checkout / "internal").rglob("*.go"):
        if path.name.endswith("_test.go"):
            continue
        text = path.read_text(errors="replace")
        names = [m["name"] for m in ANNOTATION.finditer(text)]
        if "resource.MetadataRequest" in text:  # not a data source's or an ephemeral's
            names += [m["name"] for m in TYPE_NAME.finditer(text)]
            names += [prefix + m["suffix"] for m in SUFFIX_NAME.finditer(text)]
        for name in names:
            files.setdefault(name, path)
    return files


@dataclass
class Overrides:
    """What a bridge's provider/*.go says of one resource: fields it forces new, whether it
    deletes before replacing, and its auto-named fields (Terraform names)."""

    forced: list[str] = field(default_factory=list)
    delete_first: bool = False
    auto_named: list[str] = field(default_factory=list)
    # A field entry that names the field without auto-naming it (aws_route53_record's
    # "name": {Name: "name"}): the blanket auto-naming of `name` skips it.
    plain: list[str] = field(default_factory=list)


FIELDS_MAP = re.compile(r"Fields:\s*map\[string\]\*(?:tfbridge\.SchemaInfo|info\.Schema)\{")
# pulumi-aws's autonaming.go: every resource with an input `name` and no field entry for it
# gets tfbridge.AutoName("name", 255, "-").
BLANKET_AUTONAME = "func setAutonaming("


def pulumi_overrides(resources_go: str, terraform: str) -> Overrides:
    """One resource's overrides in a bridge's provider sources (resources.go, and in
    pulumi-aws 7 resource_overrides.go): ``ForceNew: tfbridge.True()`` fields,
    ``DeleteBeforeReplace``, and auto-named fields (``tfbridge.AutoName*`` or a default
    with ``AutoNamed: true``), read from the entry's own top-level Fields only."""
    found = Overrides()
    at = resources_go.find(f'"{terraform}": {{')
    if at < 0:
        return found
    entry = block_at(resources_go, resources_go.find("{", at))
    found.forced = [
        m[1]
        for m in re.finditer(r'"([a-z0-9_]+)":\s*\{[^{}]*ForceNew:\s*tfbridge\.True\(\)', entry)
    ]
    found.delete_first = bool(re.search(r"\bDeleteBeforeReplace:\s*true", own_level(entry)))
    fields = FIELDS_MAP.search(entry)
    if fields:
        for key, value in entries(block_at(entry, fields.end() - 1)).items():
            call = value.removeprefix(CALLED).split("(", 1)[0] if value.startswith(CALLED) else ""
            if "AutoName" in call or re.search(r"\bAutoNamed:\s*true", value):
                found.auto_named.append(key)
            else:
                found.plain.append(key)
    return found


def sdk_inputs(type_: str) -> set[str]:
    package, rest = type_.split(":", 1)
    module_path, cls = rest.split(":")
    module = module_path.split("/")[0]
    sdk = importlib.import_module(
        f"pulumi_{package}" if module == "index" else f"pulumi_{package}.{module}"
    )
    params = inspect.signature(getattr(sdk, cls)._internal_init).parameters
    return {camel(p) for p in params if not p.startswith("_")} - {"self", "resourceName", "opts"}


def pulumi_name(path: str, known: set[str]) -> str | None:
    """A Terraform path's Pulumi name: camelCase, lists pluralized as the bridge does."""
    head, _, rest = path.partition(".")
    base = camel(head)
    for candidate in (base, base + "s", base + "es", base[:-1] + "ies"):
        if candidate in known:
            return candidate + ("." + ".".join(camel(p) for p in rest.split(".")) if rest else "")
    return None


def commit_of(checkout: Path) -> dict[str, str | None]:
    """The checkout's commit and its date: the version every path of it was read at."""
    done = subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%H %cI"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    commit, _, date = done.stdout.strip().partition(" ")
    return {"commit": commit or None, "committed": date or None}


def _names(type_: str, paths: list[str], known: set[str], problems: list[str]) -> list[str]:
    out = []
    for path in paths:
        name = pulumi_name(path, known)
        if name is None:
            problems.append(f"{type_}: {path} has no input in the SDK")
        else:
            out.append(name)
    return sorted(set(out))


def refreshed(
    data: dict[str, Any],
    tf_files: dict[str, Path],
    checkouts: dict[str, Path],
    resources_go: dict[str, str],
) -> tuple[dict[str, Any], list[str]]:
    """Each type's rules re-read from the sources; and the lines it could not map.

    ``resources_go`` holds each bridge's provider/resources.go ("aws", "random"); a bridge
    without one is reported, its own overrides then being absent from the data."""
    problems = []
    for type_, entry in data["types"].items():
        terraform = entry["terraform"]
        provider = "random" if terraform.startswith("random_") else "aws"
        repo = f"hashicorp/terraform-provider-{provider}"
        bridge = resources_go.get(provider)
        overrides = pulumi_overrides(bridge or "", terraform)
        known = sdk_inputs(type_)
        if entry.get("source", {}).get("note"):
            # Read by hand from another version of its file (its note says which and
            # what): a checkout of another commit must not overwrite it.
            problems.append(f"{type_}: its source note says how it was read; kept as it is")
            apply_bridge(entry, bridge, overrides, known, type_, problems)
            continue
        path = tf_files.get(terraform)
        if path is None:
            problems.append(f"{type_}: no source file declares {terraform}")
            apply_bridge(entry, bridge, overrides, known, type_, problems)
            continue
        schema_path = schema_source(path)
        package = {
            p.name: strip_comments(p.read_text(errors="replace"))
            for p in schema_path.parent.glob("*.go")
            if not p.name.endswith("_test.go")
        }
        found = read_resource(schema_path.read_text(), package)

        replace = _names(type_, found.replace + overrides.forced, known, problems)
        when = {pulumi_name(k, known) or k: v for k, v in found.replace_when.items()}
        when = {k: sorted(set(v)) for k, v in when.items() if k not in replace}
        top_replaced = {r for r in replace if "." not in r}
        update = set(_names(type_, found.inputs, known, problems)) - top_replaced - set(when)
        classified = {r.split(".")[0] for r in replace} | set(when) | update
        checkout = checkouts[provider]
        entry.update(
            source={
                "repo": repo,
                "path": str(path.relative_to(checkout)),
                **(
                    {"schema_path": str(schema_path.relative_to(checkout))}
                    if schema_path != path
                    else {}
                ),
                **commit_of(checkout),
            },
        )
        previous = {
            "replace": list(entry.get("replace", [])),
            "update": list(entry.get("update", [])),
            "replace_when": dict(entry.get("replace_when", {})),
        }
        entry.update(
            replace=replace, replace_when=dict(sorted(when.items())), update=sorted(update)
        )
        for key in ("unclassified", "documented", "delete_before_replace", "auto_named"):
            entry.pop(key, None)
        # Inputs the SDK has but the source read does not declare: that source is older
        # (or newer) than the bridged one. Never guessed: a class the data carried before,
        # from the provider's documentation, is kept and marked 'documented'; the rest are
        # listed 'unclassified'.
        missing = sorted(known - classified - IMPLICIT_INPUTS)
        documented = carry_documented(entry, previous, missing)
        unclassified = [m for m in missing if m not in documented]
        if documented:
            entry["documented"] = documented
            problems.append(f"{type_}: not in the source read, kept as documented: {documented}")
        if unclassified:
            entry["unclassified"] = unclassified
            problems.append(f"{type_}: not in the source read, so unclassified: {unclassified}")
        for note in found.unmapped:
            problems.append(f"{type_}: {note} ({schema_path.name}): not mapped")
        if bridge is None:
            problems.append(f"{type_}: no pulumi-{provider} provider/resources.go given: "
                            "its own ForceNew overrides are not in this data")  # fmt: skip
        apply_bridge(entry, bridge, overrides, known, type_, problems)
    return data, problems


def apply_bridge(
    entry: dict[str, Any],
    bridge: str | None,
    overrides: Overrides,
    known: set[str],
    type_: str,
    problems: list[str],
) -> None:
    """The bridge's own rules for one type: delete-before-replace, and the auto-named
    inputs (given explicitly, they make the bridge delete before replacing)."""
    if bridge is None:
        return
    entry.pop("delete_before_replace", None)
    entry.pop("auto_named", None)
    if overrides.delete_first:
        entry["delete_before_replace"] = True
    auto = list(overrides.auto_named)
    if BLANKET_AUTONAME in bridge and "name" in known and "name" not in overrides.plain:
        auto.append("name")
    if auto:
        entry["auto_named"] = _names(type_, sorted(set(auto)), known, problems)


def carry_documented(
    entry: dict[str, Any], previous: dict[str, Any], missing: list[str]
) -> list[str]:
    """Keep the previous data's rules for inputs the source read does not declare."""
    kept = set()
    for rule in previous["replace"]:
        if rule.split(".")[0] in missing:
            entry["replace"] = sorted({*entry["replace"], rule})
            kept.add(rule.split(".")[0])
    for rule, conditions in previous["replace_when"].items():
        if rule.split(".")[0] in missing:
            entry["replace_when"] = dict(
                sorted({**entry["replace_when"], rule: conditions}.items())
            )
            kept.add(rule.split(".")[0])
    for name in previous["update"]:
        if name in missing:
            entry["update"] = sorted({*entry["update"], name})
            kept.add(name)
    return sorted(kept)


# An input the SDK lists that no Terraform schema declares as an argument. None known.
IMPLICIT_INPUTS: set[str] = set()


def locked(package: str) -> str:
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    version: str = next(p["version"] for p in lock["package"] if p["name"] == package)
    return version


# The bridge's files that hold resource overrides: pulumi-aws 7 moved them out of
# resources.go into resource_overrides.go, and its blanket auto-naming into autonaming.go.
BRIDGE_FILES = ("resources.go", "resource_overrides.go", "autonaming.go")


def bridge_sources(checkout: Path) -> str:
    """A bridge's override sources, joined: those of BRIDGE_FILES its provider/ holds."""
    found = [
        checkout / "provider" / n for n in BRIDGE_FILES if (checkout / "provider" / n).exists()
    ]
    if not found:
        raise SystemExit(f"{checkout}/provider holds none of {', '.join(BRIDGE_FILES)}")
    return "\n".join(p.read_text() for p in found)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--terraform-aws", type=Path, required=True, help="a git checkout")
    parser.add_argument("--terraform-random", type=Path, help="a git checkout")
    parser.add_argument("--pulumi-aws", type=Path, help="a checkout with provider/resources.go")
    parser.add_argument("--pulumi-random", type=Path, help="likewise, of pulumi-random")
    parser.add_argument("--provenance", type=Path,
                        help="a JSON file saying which versions were read and why; "
                             "copied into the data file's 'provenance'")  # fmt: skip
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)
    files = terraform_files(args.terraform_aws)
    checkouts = {"aws": args.terraform_aws, "random": args.terraform_random or args.terraform_aws}
    if args.terraform_random:
        files.update(terraform_files(args.terraform_random, prefix="random"))
    resources_go = {
        provider: bridge_sources(checkout)
        for provider, checkout in (("aws", args.pulumi_aws), ("random", args.pulumi_random))
        if checkout is not None
    }
    data = json.loads(DATA.read_text())
    data, problems = refreshed(data, files, checkouts, resources_go)
    data["pulumi_aws"], data["pulumi_random"] = locked("pulumi-aws"), locked("pulumi-random")
    if args.provenance:
        data["provenance"] = json.loads(args.provenance.read_text())
    for problem in dict.fromkeys(problems):
        print(problem, file=sys.stderr)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.out} ({len(data['types'])} types, {len(problems)} lines not mapped)")
    return 1 if any("no source file" in p or "has no input" in p for p in problems) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
