"""Rewrite infra/slurmstack/change/replacement.json from the provider's sources, when
pulumi-aws (or pulumi-random) is bumped in uv.lock.

    git clone --branch v<pulumi-aws version> --recurse-submodules <pulumi-aws repository> pa
    (cd pa && make upstream)   # the pinned terraform-provider-aws with pulumi's patches
    uv run python tools/refresh_replacement_data.py --pulumi-aws pa --terraform-aws pa/upstream \\
        [--terraform-random <terraform-provider-random checkout>]

For every resource type in the data file it finds the Terraform resource's source file (by
its ``@SDKResource``/``@FrameworkResource`` annotation), reads which attributes force a
replacement (``ForceNew: true``; ``RequiresReplace()`` plan modifiers; ``ForceNew`` calls and
``ForceNewIfChange`` in a CustomizeDiff, as conditions), adds pulumi-aws's own overrides
(``ForceNew: tfbridge.True()`` fields and ``DeleteBeforeReplace`` in provider/resources.go),
maps Terraform names to the Pulumi input names of the installed SDK, and records the source
file with the checkout's commit. The versions written are uv.lock's; the test in
tests/unit/change/test_replacement_data.py fails until they match.

Go is parsed by brace matching, not compiled: enough for the schema literals the provider
writes, and it says which attributes it could not map instead of guessing.
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
KEY = re.compile(
    r'^\s*(?:"(?P<quoted>[a-z0-9_]+)"|names\.(?P<const>Attr[A-Za-z0-9]+))\s*:\s*', re.M
)


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


def entries(body: str) -> dict[str, str]:
    """Top-level ``key: {...}`` / ``key: schema.XAttribute{...}`` entries of a schema map."""
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
                name = match["quoted"] or snake_of_constant(match["const"])
                brace = body.find("{", match.end())
                inner = block_at(body, brace)
                found[name] = inner
                i = brace + len(inner) + 2
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


def walk(schema_body: str, prefix: str, found: Found) -> None:
    for name, entry in entries(schema_body).items():
        path = f"{prefix}{name}"
        flags = own_level(entry)
        if re.search(r"\bComputed:\s*true", flags) and not re.search(
            r"\b(Optional|Required):\s*true", flags
        ):
            continue  # an output only
        if not prefix:
            found.inputs.append(name)
        if (
            re.search(r"\bForceNew:\s*true", flags)
            or "RequiresReplace()" in entry.split("Elem:")[0]
        ):
            found.replace.append(path)
        elif "RequiresReplaceIf" in flags:
            found.replace_when.setdefault(path, []).append("provider condition")
        nested = nested_schema(entry)
        if nested is not None:
            walk(nested, f"{path}.", found)


def customize_diff(source: str, found: Found) -> None:
    for match in re.finditer(r'ForceNewIfChange\("([a-z0-9_.]+)"', source):
        window = source[match.end() : match.end() + 400]
        condition = "decrease" if re.search(r"new[^<>\n]*<\s*old", window) else "provider condition"
        found.replace_when.setdefault(match[1], []).append(condition)
    for match in re.finditer(r'\.ForceNew\("([a-z0-9_.]+)"\)', source):
        window = source[max(0, match.start() - 600) : match.start()]
        condition = (
            "decrease" if re.search(r"n(ew)?[^<>\n]*<\s*o(ld)?", window) else "provider condition"
        )
        found.replace_when.setdefault(match[1].replace(".0.", "."), []).append(condition)


def read_resource(source: str) -> Found:
    source = strip_comments(source)
    found = Found()
    for marker in ("Schema: map[string]*schema.Schema{", "return map[string]*schema.Schema{",
                   "Attributes: map[string]schema.Attribute{"):  # fmt: skip
        at = source.find(marker)
        if at >= 0:
            walk(block_at(source, at + len(marker) - 1), "", found)
            break
    customize_diff(source, found)
    return found


def terraform_files(checkout: Path) -> dict[str, Path]:
    files = {}
    for path in (checkout / "internal").rglob("*.go"):
        if path.name.endswith("_test.go"):
            continue
        for match in ANNOTATION.finditer(path.read_text(errors="replace")):
            files[match["name"]] = path
    return files


def pulumi_overrides(resources_go: str, terraform: str) -> tuple[list[str], bool]:
    """(fields pulumi-aws forces new, whether it sets DeleteBeforeReplace) for one resource."""
    at = resources_go.find(f'"{terraform}": {{')
    if at < 0:
        return [], False
    entry = block_at(resources_go, resources_go.find("{", at))
    forced = [
        m[1]
        for m in re.finditer(r'"([a-z0-9_]+)":\s*\{[^{}]*ForceNew:\s*tfbridge\.True\(\)', entry)
    ]
    return forced, bool(re.search(r"DeleteBeforeReplace:\s*true", entry))


def sdk_inputs(type_: str) -> set[str]:
    package, rest = type_.split(":", 1)
    module_path, cls = rest.split(":")
    module = module_path.split("/")[0]
    sdk = importlib.import_module(
        f"pulumi_{package}" if module == "index" else f"pulumi_{package}.{module}"
    )
    params = inspect.signature(getattr(sdk, cls)._internal_init).parameters
    return {camel(p) for p in params} - {"Self", "self", "resourceName", "opts", "__self__"}


def pulumi_name(path: str, known: set[str]) -> str | None:
    """A Terraform path's Pulumi name: camelCase, lists pluralized as the bridge does."""
    head, _, rest = path.partition(".")
    base = camel(head)
    for candidate in (base, base + "s", base + "es", base[:-1] + "ies"):
        if candidate in known:
            return candidate + ("." + ".".join(camel(p) for p in rest.split(".")) if rest else "")
    return None


def commit_of(checkout: Path) -> str | None:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return done.stdout.strip() or None


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
    resources_go: str,
) -> tuple[dict[str, Any], list[str]]:
    problems = []
    for type_, entry in data["types"].items():
        terraform = entry["terraform"]
        repo = (
            "hashicorp/terraform-provider-random"
            if terraform.startswith("random_")
            else "hashicorp/terraform-provider-aws"
        )
        path = tf_files.get(terraform)
        if path is None:
            problems.append(f"{type_}: no source file annotated {terraform}")
            continue
        found = read_resource(path.read_text())
        forced, delete_first = pulumi_overrides(resources_go, terraform)
        known = sdk_inputs(type_)

        replace = _names(type_, found.replace + forced, known, problems)
        when = {pulumi_name(k, known) or k: v for k, v in found.replace_when.items()}
        top_replaced = {r.split(".")[0] for r in replace}
        checkout = checkouts["random" if "random" in repo else "aws"]
        entry.update(
            replace=replace,
            replace_when=dict(sorted(when.items())),
            update=sorted(
                set(_names(type_, found.inputs, known, problems)) - top_replaced - set(when)
            ),
            source={
                "repo": repo,
                "path": str(path.relative_to(checkout)),
                "commit": commit_of(checkout),
            },
        )
        if delete_first:
            entry["delete_before_replace"] = True
    return data, problems


def locked(package: str) -> str:
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    version: str = next(p["version"] for p in lock["package"] if p["name"] == package)
    return version


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pulumi-aws", type=Path, required=True)
    parser.add_argument("--terraform-aws", type=Path, required=True)
    parser.add_argument("--terraform-random", type=Path)
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)
    files = terraform_files(args.terraform_aws)
    checkouts = {"aws": args.terraform_aws, "random": args.terraform_random or args.terraform_aws}
    if args.terraform_random:
        files.update(terraform_files(args.terraform_random))
    resources_go = (args.pulumi_aws / "provider" / "resources.go").read_text()
    data = json.loads(DATA.read_text())
    data, problems = refreshed(data, files, checkouts, resources_go)
    data["pulumi_aws"], data["pulumi_random"] = locked("pulumi-aws"), locked("pulumi-random")
    for problem in problems:
        print(problem, file=sys.stderr)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.out} ({len(data['types'])} types, {len(problems)} problems)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
