"""The image pins (``image_pins.json``): every version and every download a node image bakes,
and the rule that each download carries a pin the bake can check.

A download is pinned one of two ways:

- ``{"url": ..., "sha256": <64 hex>}``: the file's own digest, checked before it is used;
- ``{"git": {"repository": ..., "tag": ..., "commit": <40 hex>}}``: a clone whose tag must
  resolve to that commit (and whose submodules to the commits it records), built from source;
- ``{"package": {arch: url}, "signing_key": {"keys": url, "fingerprint": <40 hex>}, "git": ...}``:
  a publisher's release package of one version, installed only when its detached signature
  verifies by the key with that fingerprint, the release's commit recorded beside it.

Anything else (a ``null`` digest, a missing commit, a plain URL) is unpinned: ``validate`` and
``plan`` report it, the Pulumi program refuses to start, and ``build.sh`` would refuse it too,
so an unpinned download never costs half an hour of ``pulumi up``. The apt packages come from
signed indexes (the distribution's, NVIDIA's, the FSx repository's) and are pinned by those.

Pure and read-only: the checks, the plan and the stack share it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

PINS_FILE = Path(__file__).resolve().parent / "image_pins.json"
SHA256 = re.compile(r"^[0-9a-f]{64}$")
GIT_COMMIT = re.compile(r"^[0-9a-f]{40}$")
GPG_FINGERPRINT = re.compile(r"^[0-9A-F]{40}$")


@cache
def image_pins() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PINS_FILE.read_text())
    return data


def _walk(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(dotted path, object) of every object in the pins."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}" if path else key)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{path}[{index}]")


def _git_problems(path: str, git: Any) -> Iterator[str]:
    if not isinstance(git, dict):
        yield f"{path}: expected an object with repository, tag and commit"
        return
    repository, tag, commit = git.get("repository"), git.get("tag"), git.get("commit")
    if not (isinstance(repository, str) and repository.startswith("https://")):
        yield f"{path}.repository: {repository!r} is not an https:// repository address"
    if not (isinstance(tag, str) and tag):
        yield f"{path}.tag: missing (the release tag the commit belongs to)"
    if not (isinstance(commit, str) and GIT_COMMIT.match(commit)):
        yield (
            f"{path}.commit: {commit!r} is not a 40-digit git commit; record the commit tag "
            f"{tag} points to (git rev-parse '{tag}^{{commit}}' in a clone of {repository})"
        )


def _signing_problems(path: str, key: Any) -> list[str]:
    fingerprint = key.get("fingerprint") if isinstance(key, dict) else None
    if isinstance(fingerprint, str) and GPG_FINGERPRINT.match(fingerprint):
        return []
    return [
        f"{path}.signing_key.fingerprint: {fingerprint!r} is not a 40-digit key fingerprint; "
        "record the fingerprint the publisher lists for its release key (a package is installed "
        "only when its signature verifies by that key)"
    ]


def pin_problems(pins: dict[str, Any] | None = None) -> list[str]:
    """Every download of the pins that carries no pin a bake can check, as
    ``key.path: what is wrong`` lines (empty: every download is pinned)."""
    problems: list[str] = []
    for path, node in _walk(image_pins() if pins is None else pins, ""):
        if "git" in node:
            problems += _git_problems(f"{path}.git" if path else "git", node["git"])
        if isinstance(node.get("package"), dict):  # per-architecture release packages
            problems += _signing_problems(path, node.get("signing_key"))
        if "url" in node:
            digest = node.get("sha256")
            if not (isinstance(digest, str) and SHA256.match(digest)):
                problems.append(
                    f"{path}.sha256: {digest!r} is not a sha256 for {node['url']}; record the "
                    "file's sha256 (from a signed index or your own download), or build from "
                    "a git commit instead"
                )
    return problems
