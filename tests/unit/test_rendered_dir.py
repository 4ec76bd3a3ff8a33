"""`slurmstack render --out DIR`: usage errors, and no file of an earlier render left behind,
while files slurmstack did not write (or that were changed since) are never removed."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from slurmstack.cli import app
from slurmstack.render import render_cluster
from slurmstack.rendered_dir import MANIFEST, digest, write_rendered
from support.examples import REPO, example_plan


def render(source: str, out: Path):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["render", str(REPO / source), "--out", str(out)])


def files_under(out: Path) -> set[str]:
    return {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}


def test_out_pointing_at_a_file_is_a_usage_error(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("mine\n")
    result = render("examples/cpu-hpc.yaml", target)
    assert result.exit_code == 2, result.output
    assert "is an existing file; give a directory" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert target.read_text() == "mine\n"


def test_out_below_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    result = render("examples/cpu-hpc.yaml", tmp_path / "file" / "out")
    assert result.exit_code == 2, result.output
    assert "cannot write to" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_second_render_leaves_nothing_of_the_first(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert render("examples/p5-training.yaml", out).exit_code == 0
    # Files slurmstack never wrote: at the top and inside a rendered directory.
    (out / "README.local").write_text("mine\n")
    (out / "head" / "etc" / "slurm" / "site.conf").write_text("mine\n")
    result = render("examples/cpu-hpc.yaml", out)
    assert result.exit_code == 0, result.output
    expected = set(render_cluster(example_plan("cpu-hpc")))
    mine = {"README.local", "head/etc/slurm/site.conf"}
    assert files_under(out) == expected | mine | {MANIFEST}
    assert "removed " in result.output
    # The p5 pools' directories are gone with their files.
    assert not (out / "train").exists() and not (out / "dev").exists()
    assert set(json.loads((out / MANIFEST).read_text())["files"]) == expected


def test_a_file_changed_by_hand_since_the_render_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_rendered({"a/x.conf": "one\n", "b/y.conf": "two\n"}, out)
    (out / "a" / "x.conf").write_text("edited\n")
    result = write_rendered({"b/y.conf": "two\n"}, out)
    assert result.kept == ["a/x.conf"] and result.removed == []
    assert (out / "a" / "x.conf").read_text() == "edited\n"
    again = write_rendered({"b/y.conf": "two\n"}, out)
    assert again.kept == ["a/x.conf"]


def test_a_foreign_or_unsafe_manifest_removes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (out / "x.conf").write_text("keep\n")
    files = {"../outside.txt": digest("keep\n"), "x.conf": digest("keep\n")}
    (out / MANIFEST).write_text(json.dumps({"generator": "something else", "files": files}))
    assert write_rendered({"y.conf": "new\n"}, out).removed == []
    assert (out / "x.conf").exists()
    (out / MANIFEST).write_text(json.dumps({"generator": "slurmstack render", "files": files}))
    assert write_rendered({"y.conf": "new\n"}, out).removed == ["x.conf"]
    assert outside.read_text() == "keep\n"
    (out / MANIFEST).write_text("{not json")
    assert write_rendered({"z.conf": "z\n"}, out).removed == []
    assert (out / "y.conf").exists()
