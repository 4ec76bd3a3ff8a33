"""docs/changing-a-cluster.md says what the code does: its classes and replacement table are
generated from the change data, its field table from the changes the tests run."""

from __future__ import annotations

import sys
from pathlib import Path

from slurmstack.change import docs_page

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests"))
from change_mutations import FIELDS_END, FIELDS_START, field_table  # noqa: E402


def test_the_generated_block_is_current() -> None:
    assert docs_page.main(["--check"]) == 0, "run `uv run python -m slurmstack.change.docs_page`"


def test_the_field_table_is_the_one_the_tests_run() -> None:
    page = docs_page.PAGE.read_text()
    between = page.split(FIELDS_START, 1)[1].split(FIELDS_END, 1)[0].strip()
    assert between == field_table(), "run `uv run python tests/change_mutations.py`"


def test_the_readme_links_the_page() -> None:
    assert "docs/changing-a-cluster.md" in (REPO / "README.md").read_text()
