"""Golden files: the render output of every example, as `slurmstack render` writes it.

Refreshed only on purpose: `SLURMSTACK_UPDATE_GOLDEN=1 pytest tests/golden` (or
`python tests/golden/refresh.py`), then review the diff like any other change.

The node agent's modules are left out of the golden copies: they are the package's own
source files delivered verbatim (tests/unit/test_render.py checks that), so a copy per role
and example would only repeat them. This test checks each role still receives all of them.
The jobs' programs that are not templates (templates/jobs/lib, delivered verbatim, the same on
every node of every cluster) are left out the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slurmstack.contract import JOBS_LIB_DIR
from slurmstack.render import AGENT_DIR, agent_files, render_cluster
from slurmstack.render.jobs import verbatim_library
from support.examples import EXAMPLE_IDS, example_plan

GOLDEN = Path(__file__).resolve().parent / "files"
UPDATE = os.environ.get("SLURMSTACK_UPDATE_GOLDEN") == "1"
AGENT_MARK = AGENT_DIR + "/"


def golden_view(rendered: dict[str, str]) -> dict[str, str]:
    """The rendered files a golden copy keeps: all but the agent's modules and the jobs'
    verbatim programs."""
    verbatim = tuple(verbatim_library())
    return {
        rel: text
        for rel, text in rendered.items()
        if AGENT_MARK not in "/" + rel and not ("/" + rel).endswith(verbatim)
    }


def write_golden(example: str) -> None:
    root = GOLDEN / example
    for old in sorted(root.rglob("*"), reverse=True) if root.exists() else []:
        old.unlink() if old.is_file() else old.rmdir()
    for rel, text in golden_view(render_cluster(example_plan(example))).items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_render_matches_golden(example: str) -> None:
    if UPDATE:
        write_golden(example)
    root = GOLDEN / example
    assert root.is_dir(), f"no golden files for {example}: run with SLURMSTACK_UPDATE_GOLDEN=1"
    everything = render_cluster(example_plan(example))
    rendered = golden_view(everything)
    # "head/..." or "pools/<pool>/...": the role directories of the render layout.
    roles = {"/".join(rel.split("/")[: 1 if rel.startswith("head/") else 2]) for rel in rendered}
    modules = sorted(p[len(AGENT_MARK) :] for p in agent_files() if p.startswith(AGENT_MARK))
    for role in roles:
        prefix = f"{role}{AGENT_DIR}/"
        delivered = sorted(rel[len(prefix) :] for rel in everything if rel.startswith(prefix))
        assert delivered == modules, f"{role} does not receive every agent module"
        for path, text in verbatim_library().items():
            assert everything[role + path] == text, f"{role} lacks {path}"
            assert path.startswith(JOBS_LIB_DIR + "/")
    on_disk = {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}
    assert sorted(on_disk) == sorted(rendered), "files added or removed"
    for rel, text in rendered.items():
        assert on_disk[rel] == text, f"{example}/{rel} differs from its golden file"
