"""Write rendered files into a directory, leaving nothing of an earlier render behind.

`slurmstack render --out DIR` records what it wrote in DIR/.slurmstack-render.json (each
file's path and content hash). The next render into DIR removes the files the last one wrote
that this one does not write (a pool renamed or removed), but only those: a file slurmstack
never wrote is never touched, and a file it wrote that was changed since is kept and reported
rather than deleted. Directories left empty by a removal go too.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

MANIFEST = ".slurmstack-render.json"
GENERATOR = "slurmstack render"


class OutputError(Exception):
    """The output directory cannot be used (a file, or not writable)."""


@dataclass
class WriteResult:
    written: int
    removed: list[str] = field(default_factory=list)  # files of the last render, now gone
    kept: list[str] = field(default_factory=list)  # files of the last render changed by hand


def digest(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def _safe_relative(rel: str) -> bool:
    """A manifest entry names a file below the directory: relative, no '..'."""
    path = PurePosixPath(rel)
    return bool(rel) and not path.is_absolute() and ".." not in path.parts


def _previous(out: Path) -> dict[str, str]:
    """{relative path: sha256} of the last render into ``out``; empty when there is none or
    the manifest is not one slurmstack wrote (then nothing is removed)."""
    try:
        data = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if data.get("generator") != GENERATOR or not isinstance(files, dict):
        return {}
    return {
        rel: sha
        for rel, sha in files.items()
        if isinstance(rel, str) and isinstance(sha, str) and _safe_relative(rel)
    }


def _write_manifest(out: Path, files: dict[str, str]) -> None:
    document = {"generator": GENERATOR, "files": dict(sorted(files.items()))}
    (out / MANIFEST).write_text(json.dumps(document, indent=1) + "\n")


def _prune_empty_dirs(start: Path, out: Path) -> None:
    directory = start
    while directory != out and out in directory.parents:
        try:
            directory.rmdir()  # only succeeds when empty
        except OSError:
            return
        directory = directory.parent


def write_rendered(files: dict[str, str], out: Path) -> WriteResult:
    """Write ``files`` ({relative path: text}) under ``out``; see the module docstring."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out} is a file, not a directory; give --out a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        previous = _previous(out)
        now = {rel: digest(text) for rel, text in files.items()}
        # Record the union first: a render that stops half-way still knows every file.
        _write_manifest(out, {**previous, **now})
        for rel, text in files.items():
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    except OSError as exc:
        raise OutputError(f"cannot write to {out}: {exc.strerror or exc}") from exc

    result = WriteResult(written=len(files))
    root = out.resolve()
    for rel in sorted(set(previous) - set(files)):
        path = out / rel
        if path.is_symlink() or not path.is_file() or root not in path.resolve().parents:
            continue
        if digest(path.read_bytes()) != previous[rel]:
            result.kept.append(rel)
            continue
        path.unlink()
        result.removed.append(rel)
        _prune_empty_dirs(path.parent, out)
    _write_manifest(out, {**now, **{rel: previous[rel] for rel in result.kept}})
    return result
