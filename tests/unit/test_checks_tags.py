"""Rules in slurmstack.checks.tags: each case triggers exactly its rule."""

from __future__ import annotations

import pytest

from slurmstack.checks.tags import SLURMSTACK_TAG_KEYS
from support.checks import Case, check_case, set_in

ROOM = 50 - len(SLURMSTACK_TAG_KEYS)

CASES = [
    Case(
        "tag-count",
        set_in("tags", {f"k{i}": "v" for i in range(ROOM + 1)}),
        "tags",
        f"keep at most {ROOM}",
    ),
    Case(
        "tag-key-length",
        set_in("tags", {"k" * 129: "v"}),
        "tags." + "k" * 129,
        "tag key of 129 characters",
    ),
    Case("tag-key-length", set_in("tags", {"": "v"}), "tags.", "of 0 characters", name="empty"),
    Case(
        "tag-value-length",
        set_in("tags", {"team": "v" * 257}),
        "tags.team",
        "at most 256",
    ),
    Case("tag-aws-prefix", set_in("tags", {"AWS:owner": "me"}), "tags.AWS:owner", "reserved"),
    Case("tag-characters", set_in("tags", {"team": "r&d"}), "tags.team", "contains '&'"),
    Case(
        "tag-characters",
        set_in("tags", {"cost*center": "1"}),
        "tags.cost*center",
        "tag key 'cost*center'",
        name="key",
    ),
    Case(
        "tag-reserved-prefix",
        set_in("tags", {"slurmstack:role": "x"}),
        "tags.slurmstack:role",
        "set by slurmstack",
    ),
    Case("tag-reserved-prefix", set_in("tags", {"Name": "x"}), "tags.Name", "set by", name="Name"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


def test_unicode_letters_are_allowed() -> None:
    from support.checks import definition, findings

    assert findings(definition(set_in("tags", {"équipe": "recherche Zürich @ 2"}))) == []
