"""One codec for the JSON documents render writes and the agent reads (node.json,
accounting.json, acceptance.json): a frozen dataclass in, sorted two-space JSON out, and back.
A field is written unless it holds its default, so a new field is one edit (its line in the
dataclass) and a role's file holds only what differs from the defaults. The types it knows are
the ones the documents use: str, int, float, bool, enums, nested dataclasses, ``X | None``,
``tuple[X, ...]``, ``tuple[tuple[str, str], ...]`` and ``dict[str, X]``.

The config store's manifest keeps its own compact reader: the first-boot script carries it in
the user data, where every byte counts."""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from typing import Any, TypeVar

__all__ = ["GENERATED_BY", "dump_document", "load_document"]

# The first key of every document, so an operator knows where the file came from.
GENERATED_BY = "slurmstack"

_Record = TypeVar("_Record")


def dump_document(record: object) -> str:
    """``record`` as render writes it: sorted keys, two-space indent, a final newline."""
    data = {"generated_by": GENERATED_BY, **_to_data(record)}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def load_document(cls: type[_Record], text: str) -> _Record:
    """The ``cls`` a document holds (ValueError, KeyError or TypeError for a malformed one;
    keys it does not know are left alone)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"a {cls.__name__} document is a JSON object")
    record: _Record = _from_data(cls, data)
    return record


def _to_data(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _to_data(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not _is_default(f, getattr(value, f.name))
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_to_data(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_data(v) for k, v in value.items()}
    return value


def _is_default(field: dataclasses.Field[Any], value: Any) -> bool:
    if field.default is not dataclasses.MISSING:
        return bool(value == field.default)
    if field.default_factory is not dataclasses.MISSING:
        return bool(value == field.default_factory())
    return False


def _from_data(kind: Any, data: Any) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _from_data(inner, data)
    if origin is tuple:
        items = list(data)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_data(args[0], item) for item in items)
        return tuple(_from_data(a, item) for a, item in zip(args, items, strict=True))
    if origin is dict:
        return {str(k): _from_data(args[1], v) for k, v in dict(data).items()}
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        for f in dataclasses.fields(kind):
            required = f.default is f.default_factory is dataclasses.MISSING
            if required and f.name not in data:
                raise KeyError(f.name)
        values = {
            f.name: _from_data(hints[f.name], data[f.name])
            for f in dataclasses.fields(kind)
            if f.name in data
        }
        return kind(**values)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind(data)
    if kind is float:
        return float(data)
    if kind in (int, str, bool) and not isinstance(data, kind):
        raise TypeError(f"{data!r} is not a {kind.__name__}")
    return data
