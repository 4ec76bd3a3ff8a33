"""A small stand-in for IAM's policy evaluation, enough to ask the cluster's documents concrete
questions ("may a pool node write config/x?"). It follows AWS's documented logic for what the
documents use: an explicit Deny wins, then an Allow, else the implicit deny; Action and Resource
match with IAM's wildcards (* and ?, actions case-insensitively); a policy variable in a
Resource (``${ec2:SourceInstanceARN}``) takes the request context's value, and a statement whose
variable the context lacks does not apply; conditions are ANDed across operators and keys and
ORed across a key's values; a negated operator (StringNotLike, ArnNotLike) is true when its key is absent,
the others false. Any other operator is refused rather than guessed.
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from typing import Any, Literal

Decision = Literal["allow", "deny", "implicit-deny"]


def _listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _match(pattern: str, value: str, *, fold: bool = False) -> bool:
    # fnmatch's [...] is not IAM syntax: escape it so only * and ? are wildcards.
    escaped = pattern.replace("[", "[[]")
    if fold:
        return fnmatch.fnmatchcase(value.lower(), escaped.lower())
    return fnmatch.fnmatchcase(value, escaped)


def _key(context: dict[str, str], key: str) -> str | None:
    folded = {k.lower(): v for k, v in context.items()}
    return folded.get(key.lower())


def _condition_holds(operator: str, key: str, wanted: list[str], context: dict[str, str]) -> bool:
    value = _key(context, key)
    if operator in ("StringNotLike", "ArnNotLike"):
        return value is None or not any(_match(w, value) for w in wanted)
    if value is None:
        return False
    if operator == "StringEquals":
        return value in wanted
    if operator in ("StringLike", "ArnLike"):
        return any(_match(w, value) for w in wanted)
    if operator == "Bool":
        return value.lower() in (w.lower() for w in wanted)
    raise ValueError(f"the stand-in evaluator does not know condition operator {operator}")


VARIABLE = re.compile(r"\$\{([^}]+)\}")


def _resolved(pattern: str, context: dict[str, str]) -> str | None:
    """A Resource with its policy variables replaced; None when one has no value."""
    missing = [v for v in VARIABLE.findall(pattern) if _key(context, v) is None]
    if missing:
        return None
    return VARIABLE.sub(lambda m: _key(context, m.group(1)) or "", pattern)


def _applies(
    statement: dict[str, Any], action: str, resource: str, context: dict[str, str]
) -> bool:
    if not any(_match(a, action, fold=True) for a in _listed(statement["Action"])):
        return False
    patterns = [_resolved(r, context) for r in _listed(statement["Resource"])]
    if not any(p is not None and _match(p, resource) for p in patterns):
        return False
    for operator, keys in statement.get("Condition", {}).items():
        for key, wanted in keys.items():
            if not _condition_holds(operator, key, _listed(wanted), context):
                return False
    return True


def decide(
    policies: Iterable[dict[str, Any]],
    action: str,
    resource: str,
    context: dict[str, str] | None = None,
) -> Decision:
    """The decision for one request, over every policy that applies to it."""
    context = context or {}
    allowed = False
    for policy in policies:
        for statement in policy["Statement"]:
            if _applies(statement, action, resource, context):
                if statement["Effect"] == "Deny":
                    return "deny"
                allowed = True
    return "allow" if allowed else "implicit-deny"
