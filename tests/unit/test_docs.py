"""The documentation: a short README that reaches every page of docs/, links that resolve, the
generated pages (configuration reference, repair table, the agent's subcommands, the stand-ins,
the diagram) and schema/cluster.schema.json written whole by tools/docs.py and current."""

from __future__ import annotations

import json
import re
from pathlib import Path

import dashboard_pictures  # tools/
import docs

from slurmstack.plan.observability import observability_plan
from slurmstack.render.dashboards import dashboards
from slurmstack.spec import ClusterSpec
from support.examples import example_plan

README = docs.REPO / "README.md"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_generated_pages_and_the_schema_file_are_current() -> None:
    assert docs.main(["--check"]) == 0, f"run `{docs.COMMAND}`"


def test_the_readme_is_short() -> None:
    assert len(README.read_text().splitlines()) < 200


def test_the_readmes_debian_packages_are_what_ci_installs() -> None:
    """A fresh machine set up from the README gets every package CI's tests need."""
    ci = (docs.REPO / ".ci/run").read_text()
    (listed,) = re.findall(r'^DEBS="([^"]+)"', ci, re.M)
    readme = " ".join(README.read_text().split())
    (named,) = re.findall(r"apt-get install ([a-z0-9 .+-]+)`", readme)
    assert named.split() == listed.split()


def _local_links(page: Path) -> list[Path]:
    """The files a markdown page links to (its anchors and web addresses aside)."""
    found = []
    for target in LINK.findall(page.read_text()):
        if target.startswith(("http://", "https://", "#", "mailto:")):
            continue
        found.append((page.parent / target.split("#", 1)[0]).resolve())
    return found


def test_every_link_resolves_and_every_docs_page_is_reachable_from_the_readme() -> None:
    """A page added to docs/ needs a link from the README or from a page it reaches (the
    index): the README is the front door."""
    reached, todo, broken = set(), [README.resolve()], []
    while todo:
        page = todo.pop()
        if page in reached:
            continue
        reached.add(page)
        for target in _local_links(page):
            if not target.exists():
                broken.append(f"{page.relative_to(docs.REPO)} -> {target}")
            elif target.suffix == ".md" and target.is_relative_to(docs.DOCS):
                todo.append(target)
    assert broken == []
    pages = {p.resolve() for p in docs.DOCS.rglob("*.md")}
    assert sorted(str(p.relative_to(docs.REPO)) for p in pages - reached) == []


def test_no_generated_text_lives_between_markers() -> None:
    """Generated pages are written whole; prose pages and the README hold no generated block."""
    for page in [README, *docs.DOCS.rglob("*.md")]:
        text = page.read_text()
        assert not re.search(r"<!-- [\w-]+:(start|end)", text), page


def test_every_definition_field_is_described() -> None:
    undescribed: list[str] = []

    def walk(model: type, prefix: str) -> None:
        for name, field in model.model_fields.items():  # type: ignore[attr-defined]
            if not field.description:
                undescribed.append(prefix + name)
            sub = docs._nested_model(field.annotation)
            if sub is not None:
                walk(sub, f"{prefix}{name}.")

    walk(ClusterSpec, "")
    assert undescribed == []


def test_reference_lists_every_top_level_key() -> None:
    text = docs.reference_markdown()
    for key in ClusterSpec.model_fields:
        assert f"| `{key}` |" in text


def test_checked_in_schema_is_the_models_schema() -> None:
    on_disk = json.loads(docs.SCHEMA_FILE.read_text())
    assert on_disk["properties"].keys() == ClusterSpec.model_json_schema()["properties"].keys()


def test_the_readme_shows_a_picture_of_every_dashboard() -> None:
    """Its "Observing the cluster" section: one picture per dashboard the cluster provisions,
    each a file tools/dashboard_pictures.py drew (the observability scenarios refresh them)."""
    readme = README.read_text()
    section = readme.split("## Observing the cluster\n", 1)[1].split("\n## ", 1)[0]
    plan = example_plan("p5-training")
    for dashboard in dashboards(observability_plan(plan)):
        picture = f"docs/images/{dashboard_pictures.picture_name(dashboard)}"
        assert f"]({picture})" in section, f"README lacks the {dashboard.title} picture"
        assert (docs.REPO / picture).stat().st_size > 10_000, picture
