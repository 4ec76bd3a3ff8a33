"""docs/changing-a-cluster.md says what the code does: its two generated pages (the classes
and replacement rules, the field table) are written whole by tools/docs.py from the change data
and from the changes the tests run, and the prose page links them."""

from __future__ import annotations

import change_docs
import docs

from change_mutations import MUTATIONS
from slurmstack.change.replacement import load

PAGE = docs.DOCS / "changing-a-cluster.md"


def test_the_change_pages_are_generated_and_current() -> None:
    for page in ("docs/reference/change-classes.md", "docs/reference/change-fields.md"):
        assert page in docs.GENERATED_FILES
        assert page not in docs.stale(), f"run `{docs.COMMAND}`"


def test_the_classes_page_has_a_row_per_registered_type_and_the_fields_page_per_change() -> None:
    classes = change_docs.classes_page("")
    for type_, rules in load().types.items():
        assert f"| `{type_.split(':')[-1]}` | `{rules.terraform}` |" in classes
    fields = change_docs.fields_page("")
    assert all(f"| `{m.field}` |" in fields for m in MUTATIONS)


def test_the_prose_page_links_both_and_the_readme_links_it() -> None:
    text = PAGE.read_text()
    assert "(reference/change-classes.md)" in text and "(reference/change-fields.md)" in text
    assert "docs/changing-a-cluster.md" in (docs.REPO / "README.md").read_text()
