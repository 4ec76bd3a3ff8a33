"""Read a definition (YAML/JSON file or stack-config object) into a ClusterSpec.

Every failure becomes a Finding with a path, never an exception: malformed YAML, an empty
file, a wrong type or an unknown key each produce one clear line.
"""

from __future__ import annotations

import copy
import difflib
import enum
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from slurmstack.definition_text import parse_json, parse_yaml, read_limited
from slurmstack.findings import Finding, format_path
from slurmstack.foreign_keys import not_slurmstack
from slurmstack.spec import AMI_PATTERN, MOUNT_PATTERN, NAME_PATTERN, ClusterSpec

# What each pattern in the models means, in words a user can act on.
PATTERN_HELP = {
    NAME_PATTERN: "lowercase letters, digits and '-', starting with a letter and not ending "
    "with '-'",
    MOUNT_PATTERN: "an absolute path: '/' then letters, digits, '.', '_', '-' and '/'",
    AMI_PATTERN: "an AMI id: 'ami-' and 8 to 17 lowercase hex digits",
    r"^vpc-[0-9a-f]{8,17}$": "a VPC id: 'vpc-' and 8 to 17 lowercase hex digits",
    r"^subnet-[0-9a-f]{8,17}$": "a subnet id: 'subnet-' and 8 to 17 lowercase hex digits",
    r"^cr-[0-9a-f]{8,17}$": "a capacity reservation id: 'cr-' and 8 to 17 lowercase hex digits",
}


@dataclass
class Loaded:
    """A spec when the definition parsed and matched the models, and what was found."""

    spec: ClusterSpec | None
    findings: list[Finding] = field(default_factory=list)
    # When the models refuse some keys that have defaults: the definition without them, so
    # the checks can still report on the rest in the same run (see ``partial_spec``).
    partial: ClusterSpec | None = None
    dropped: tuple[str, ...] = ()
    # The definition object itself (a file's content, or the stack file's config value).
    definition: Any = None


def parse_text(text: str, source: str) -> tuple[Any, list[Finding]]:
    """Parse YAML (a superset of JSON) text; a syntax error or a duplicate key becomes a
    finding with its line."""
    return parse_yaml(text, source)


# A Pulumi stack settings file (Pulumi.<stack>.yaml): the definition is the object under
# config: slurmstack:cluster, as `pulumi up` reads it.
STACK_FILE = re.compile(r"^Pulumi\.[^.]+\.ya?ml$")
STACK_CONFIG_NAMESPACE, STACK_CONFIG_NAME = "slurmstack", "cluster"
STACK_CONFIG_KEY = f"{STACK_CONFIG_NAMESPACE}:{STACK_CONFIG_NAME}"
STACK_REGION_KEY = "aws:region"


# A value `pulumi config set --secret` wrote: {secure: <ciphertext>}, readable only by the
# Pulumi CLI with the stack's secrets provider.
PULUMI_SECRET_HELP = "secure: ..., encrypted by `pulumi config set --secret`"


def is_pulumi_secret(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"secure"}


def is_stack_file(path: Path) -> bool:
    return STACK_FILE.match(path.name) is not None


def definition_in_stack(data: Any, source: str) -> tuple[Any, list[Finding]]:
    """The object under config: slurmstack:cluster of a parsed stack file, or findings that
    say what is missing. The stack's aws:region must be the definition's region."""
    config = data.get("config") if isinstance(data, dict) else None
    where = f"{source}: config.{STACK_CONFIG_KEY}"
    if not isinstance(config, dict) or STACK_CONFIG_KEY not in config:
        hint = ""
        if isinstance(config, dict) and "cluster" in config:
            hint = f"; the key is namespaced: write {STACK_CONFIG_KEY}, not cluster"
        return None, [
            Finding(
                where,
                "missing: a stack file holds the cluster definition under config: "
                f"{STACK_CONFIG_KEY}: (the object a definition file holds){hint}",
                rule="stack-file",
            )
        ]
    value = config[STACK_CONFIG_KEY]
    if is_pulumi_secret(value):
        return None, [
            Finding(
                where,
                f"is a Pulumi secret ({PULUMI_SECRET_HELP}); slurmstack reads the definition as "
                "plain config: set it with `pulumi config set --path`, without --secret",
                rule="stack-file",
            )
        ]
    region = config.get(STACK_REGION_KEY)
    wanted = value.get("region") if isinstance(value, dict) else None
    if isinstance(region, str) and isinstance(wanted, str) and region != wanted:
        return None, [
            Finding(
                f"{source}: config.{STACK_REGION_KEY}",
                f"{region!r} differs from the definition's region {wanted!r}; the stack "
                "creates its resources in aws:region, so set the two to the same region",
                rule="stack-file",
            )
        ]
    return value, []


def load_file(path: Path) -> Loaded:
    try:
        with path.open("rb") as stream:
            raw, findings = read_limited(stream, str(path))
    except OSError as exc:
        return Loaded(None, [Finding(str(path), f"cannot read file: {exc.strerror}", rule="file")])
    if raw is None:
        return Loaded(None, findings)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Loaded(None, [Finding(str(path), "file is not UTF-8 text", rule="file")])
    if path.suffix == ".json":
        data, findings = parse_json(text, str(path))
        if findings:
            return Loaded(None, findings)
    else:
        data, findings = parse_text(text, str(path))
        if findings:
            return Loaded(None, findings)
        if is_stack_file(path):
            data, findings = definition_in_stack(data, str(path))
            if findings:
                return Loaded(None, findings)
    return load_object(data, source=str(path))


def load_object(data: Any, source: str = "<definition>") -> Loaded:
    """Validate a parsed object (a file's content or the slurmstack:cluster config value)."""
    if data is None:
        return Loaded(
            None,
            [
                Finding(
                    source,
                    "definition is empty; expected a mapping with name, region, ...",
                    rule="empty",
                )
            ],
        )
    if not isinstance(data, dict):
        kind = type(data).__name__
        return Loaded(
            None,
            [
                Finding(
                    source,
                    f"definition must be a mapping of keys to values, not a {kind}",
                    rule="type",
                )
            ],
        )
    try:
        spec = ClusterSpec.model_validate(data)
    except ValidationError as exc:
        partial, dropped = partial_spec(data, list(exc.errors()))
        errors = _findings_from_errors(list(exc.errors()))
        return Loaded(None, errors, partial, dropped, definition=data)
    except (RecursionError, OverflowError, ValueError) as exc:
        return Loaded(None, [Finding(source, f"cannot validate definition: {exc}", rule="type")])
    return Loaded(spec, [], definition=data)


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that owns the mapping at ``loc`` (for listing allowed keys)."""
    model: Any = ClusterSpec
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        fields = getattr(model, "model_fields", {})
        if part not in fields:
            return None
        model = _inner_model(fields[part].annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _inner_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _shorten(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_UNION_TAGS = {
    "bool",
    "str",
    "int",
    "float",
    "none",
    "is-instance[IPv4Network]",
    "json-or-python[json=str,python=is-instance[IPv4Network]]",
}


def _is_union_tag(part: Any) -> bool:
    return isinstance(part, str) and (
        part in _UNION_TAGS
        or part.startswith(("literal[", "function-", "lax-or-strict", "json-or-python"))
    )


def _drop_key(data: Any, loc: tuple[Any, ...]) -> bool:
    """Remove the mapping key that holds the refused value at ``loc`` (the last key on the
    path: a refused list item drops its whole list). False when there is none."""
    keys = [i for i, part in enumerate(loc) if isinstance(part, str)]
    if not keys:
        return False
    node = data
    for part in loc[: keys[-1]]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
    if not isinstance(node, dict) or loc[keys[-1]] not in node:
        return False
    del node[loc[keys[-1]]]
    return True


def partial_spec(
    data: dict[str, Any], errs: list[Any]
) -> tuple[ClusterSpec | None, tuple[str, ...]]:
    """The definition with every refused key removed, when what remains is valid (each
    removed key falls back to its default). None when a required key was refused."""
    trimmed = copy.deepcopy(data)
    dropped: list[str] = []
    for _ in range(3):  # a removal can expose a refusal pydantic had not reached
        for err in errs:
            loc = tuple(p for p in err["loc"] if not _is_union_tag(p))
            keys = [i for i, part in enumerate(loc) if isinstance(part, str)]
            if keys and _drop_key(trimmed, loc):
                dropped.append(format_path(loc[: keys[-1] + 1]))
        try:
            return ClusterSpec.model_validate(trimmed), tuple(dropped)
        except ValidationError as exc:
            errs = list(exc.errors())
            if any(e["type"] == "missing" for e in errs):
                return None, ()
        except (RecursionError, OverflowError, ValueError):
            return None, ()
    return None, ()


def _findings_from_errors(errs: list[Any]) -> list[Finding]:
    """One finding per path: a union field fails once per branch, so merge those."""
    by_path: dict[str, list[Any]] = {}
    locs: dict[str, tuple[Any, ...]] = {}
    for err in errs:
        loc = tuple(p for p in err["loc"] if not _is_union_tag(p))
        path = format_path(loc)
        by_path.setdefault(path, []).append(err)
        locs[path] = loc
    out: list[Finding] = []
    for path, group in by_path.items():
        if len(group) == 1:
            out.append(_finding_from_error(locs[path], group[0]))
            continue
        if is_pulumi_secret(group[0].get("input")):
            out.append(Finding(path, _secret_message(), rule="pulumi-secret"))
            continue
        expected = "; or ".join(dict.fromkeys(_expectation(e) for e in group))
        got = f" (got {_shorten(group[0]['input'])})" if "input" in group[0] else ""
        out.append(Finding(path, f"expected {expected}{got}", rule="type"))
    return out


def _expectation(err: Any) -> str:
    msg: str = err["msg"]
    for lead in ("Input should be ", "Value error, "):
        if msg.startswith(lead):
            return msg[len(lead) :]
    return msg


def _finding_from_error(loc: tuple[Any, ...], err: Any) -> Finding:
    path = format_path(loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        parent = _model_at(loc[:-1])
        key = str(loc[-1])
        instead = not_slurmstack(parent.__name__, key) if parent else None
        if instead is not None:
            return Finding(
                path, f"{key!r} is no slurmstack setting: {instead}", rule="unsupported-key"
            )
        allowed = sorted(parent.model_fields) if parent else []
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        allowed_text = ", ".join(allowed)
        return Finding(
            path,
            f"unknown key {key!r}; {hint}allowed keys here: {allowed_text}",
            rule="unknown-key",
        )
    if kind == "missing":
        return Finding(path, "required key is missing", rule="missing")
    friendly = _friendly(kind, err, loc)
    if friendly is not None:
        return Finding(path, friendly, rule=kind)
    message = err["msg"]
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    if "(got " in message:
        pass
    elif "input" in err and kind not in {"model_type", "dict_type", "list_type"}:
        message = f"{message} (got {_shorten(err['input'])})"
    elif kind in {"model_type", "dict_type", "list_type"} and "input" in err:
        message = f"{message} (got {_kind(err['input'])} {_shorten(err['input'])})"
    return Finding(path, message, rule=kind)


def _kind(value: Any) -> str:
    names = {str: "text", int: "a number", float: "a number", bool: "a boolean"}
    return names.get(type(value), f"a {type(value).__name__}")


def _secret_message() -> str:
    return (
        f"is a Pulumi secret ({PULUMI_SECRET_HELP}), which only the Pulumi CLI can decrypt; "
        "a definition holds no secrets (the accounting database's password is in Secrets "
        "Manager: slurm.accounting.database.password_secret), so set this value in plain text"
    )


def _mapping_expected(loc: tuple[Any, ...], value: str) -> str | None:
    """For text where a mapping with a `type` belongs (`capacity: spot`): the mapping."""
    model = _model_at(loc)
    field = model.model_fields.get("type") if model is not None else None
    choices = _choices(field.annotation) if field is not None else ()
    if not choices:
        return None
    key = str(loc[-1]) if loc else "this"
    if value in choices:
        return f"{key} is a mapping: write {{type: {value}}}, not {value!r} alone"
    return f"{key} is a mapping such as {{type: {choices[0]}}} (type: {', '.join(choices)})"


def _choices(annotation: Any) -> tuple[str, ...]:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return tuple(str(member.value) for member in annotation)
    return tuple(str(arg) for arg in getattr(annotation, "__args__", ()) if isinstance(arg, str))


def _friendly(kind: str, err: Any, loc: tuple[Any, ...] = ()) -> str | None:
    """A message naming the value and the fix, for the errors users meet most."""
    value = err.get("input")
    ctx = err.get("ctx") or {}
    if is_pulumi_secret(value):
        return _secret_message()
    if kind in {"model_type", "dict_type"} and isinstance(value, str):
        return _mapping_expected(loc, value)
    if kind == "string_pattern_mismatch" and isinstance(value, str):
        pattern = str(ctx.get("pattern", ""))
        help_text = PATTERN_HELP.get(pattern)
        if help_text is None:
            return None
        hint = ""
        if pattern == NAME_PATTERN:
            fixed = "-".join(re.split(r"[^a-z0-9]+", value.lower())).strip("-")
            if fixed and fixed[0].isalpha() and fixed != value:
                hint = f" (did you mean {fixed!r}?)"
        return f"{_shorten(value)} is not valid here: use {help_text}{hint}"
    if kind == "enum" and isinstance(value, str):
        expected = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        folded = {e.lower().replace("-", "_"): e for e in expected}
        close = folded.get(value.lower().replace("-", "_").replace(" ", "_"))
        if close is None:
            near = difflib.get_close_matches(value.lower(), list(folded), n=1)
            close = folded[near[0]] if near else None
        close_list = [close] if close else []
        hint = f"; did you mean {close_list[0]!r}?" if close_list else ""
        return f"{_shorten(value)} is not one of {', '.join(expected)}{hint}"
    if kind == "ip_v4_network" and isinstance(value, str):
        try:
            network = ipaddress.ip_network(value.strip(), strict=False)
        except ValueError:
            return f"{_shorten(value)} is not an IPv4 CIDR such as 10.42.0.0/16"
        if network.version != 4:
            return f"{_shorten(value)} is an IPv6 network; slurmstack takes IPv4 CIDRs"
        return f"{value!r} has host bits set; did you mean {str(network)!r}?"
    return None
