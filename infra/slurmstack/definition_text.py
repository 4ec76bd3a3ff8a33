"""A definition's text, read strictly: a size limit, and a key given twice in one mapping is an
error that names both lines.

A YAML or JSON reader keeps the last of two equal keys and says nothing, so a second `name:`
further down a file silently renames the cluster. Both readers here refuse that instead; a
merge key (`<<: *defaults`) that a mapping overrides is not a duplicate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, BinaryIO

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from slurmstack.findings import Finding, format_path

# The largest example is 4 KB; a definition with hundreds of pools and accounts stays far below
# this. A file above it is read no further (a 50 MB file once took minutes and gigabytes before
# its first finding).
MAX_DEFINITION_BYTES = 1024 * 1024
MERGE_TAG = "tag:yaml.org,2002:merge"


def read_limited(stream: BinaryIO, source: str) -> tuple[bytes | None, list[Finding]]:
    """The file's bytes, or a finding when it holds more than MAX_DEFINITION_BYTES (read no
    further than that, so a device or an endless file ends too)."""
    raw = stream.read(MAX_DEFINITION_BYTES + 1)
    if len(raw) <= MAX_DEFINITION_BYTES:
        return raw, []
    limit = MAX_DEFINITION_BYTES // 1024
    return None, [
        Finding(
            source,
            f"is larger than {limit} KiB, the most a definition file may hold (the examples "
            "are a few KB); is this the definition you meant?",
            rule="file-size",
        )
    ]


@dataclass(frozen=True)
class _Key:
    name: str
    line: int
    column: int


def _where(mark: Any) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)


def _duplicates(node: Node, path: tuple[Any, ...], source: str, visited: set[int]) -> list[Finding]:
    """One finding per key given again in the same mapping, anywhere in the tree. A node that
    aliases (``*name``) reuse is checked once, where it is defined."""
    if id(node) in visited:
        return []
    visited.add(id(node))
    found: list[Finding] = []
    if isinstance(node, MappingNode):
        seen: dict[tuple[str, str], _Key] = {}
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG or not isinstance(key_node, ScalarNode):
                found += _duplicates(value_node, path, source, visited)
                continue
            line, column = _where(key_node.start_mark)
            key = _Key(key_node.value, line, column)
            first = seen.setdefault((key_node.tag, key_node.value), key)
            if first is not key:
                found.append(_duplicate_finding(source, path, first, key))
            found += _duplicates(value_node, (*path, key_node.value), source, visited)
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            found += _duplicates(item, (*path, index), source, visited)
    return found


def _duplicate_finding(source: str, path: tuple[Any, ...], first: _Key, again: _Key) -> Finding:
    where = f"under {format_path(path)}" if path else "at the top level"
    return Finding(
        f"{source}:{again.line}:{again.column}",
        f"duplicate key {again.name!r} {where}: first on line {first.line}, again on line "
        f"{again.line}; a YAML or JSON reader keeps only the last value, silently, so remove "
        "one of them",
        rule="duplicate-key",
    )


def parse_yaml(text: str, source: str) -> tuple[Any, list[Finding]]:
    """Parse YAML (a superset of JSON) text: a syntax error or a duplicate key becomes a
    finding with its line."""
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
            if node is None:
                return None, []
            duplicates = _duplicates(node, (), source, set())
            if duplicates:
                return None, duplicates
            return loader.construct_document(node), []
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        line, column = _where(exc.problem_mark)
        where = f"{source}:{line}:{column}" if exc.problem_mark else source
        problem = exc.problem or "malformed YAML"
        return None, [Finding(where, f"malformed YAML: {problem}", rule="yaml-syntax")]
    except yaml.YAMLError as exc:
        return None, [Finding(source, f"malformed YAML: {exc}", rule="yaml-syntax")]
    except (ValueError, RecursionError) as exc:  # e.g. bad escapes, absurd nesting
        return None, [Finding(source, f"cannot read definition: {exc}", rule="yaml-syntax")]


class _DuplicateInJson(ValueError):
    pass


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _DuplicateInJson
    return dict(pairs)


def parse_json(text: str, source: str) -> tuple[Any, list[Finding]]:
    """Parse JSON text: a syntax error or a duplicate key becomes a finding with its line.
    (A JSON text is also YAML; the YAML reader locates a duplicate's two lines.)"""
    try:
        return json.loads(text, object_pairs_hook=_refuse_duplicates) if text.strip() else None, []
    except _DuplicateInJson:
        _, findings = parse_yaml(text, source)
        return None, findings or [
            Finding(source, "a key is given twice in one object; remove one", rule="duplicate-key")
        ]
    except json.JSONDecodeError as exc:
        where = f"{source}:{exc.lineno}:{exc.colno}"
        return None, [Finding(where, f"malformed JSON: {exc.msg}", rule="json-syntax")]
    except (ValueError, RecursionError) as exc:  # e.g. a 5000-digit number, deep nesting
        return None, [Finding(source, f"cannot read definition: {exc}", rule="json-syntax")]
