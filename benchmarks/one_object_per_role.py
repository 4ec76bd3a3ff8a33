"""What one config-store object per role (instead of one per file) would give: not built.

The config store uploads one S3 object per distinct rendered file, so its resources grow
with pools x files. Bundling each role's files into one object would register one object
per role. This module measures that without building it: ``patched()`` replaces
``slurmstack.render.config_store`` with a store whose objects are one JSON bundle per role
(what a per-role object would hold); nothing else changes. Used by bench_goals.py, in
process and, as a script, in a process of its own:

    python benchmarks/one_object_per_role.py plan FILE --json   # slurmstack's CLI, patched
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def patched() -> Iterator[None]:
    from slurmstack import render

    original = render.config_store

    def one_object_per_role(plan: Any) -> Any:
        store = original(plan)
        objects: dict[str, str] = {}
        for entries in store.manifest.values():
            bundle = json.dumps(
                {path: store.objects[key] for path, key in entries.items()}, sort_keys=True
            )
            objects["config/" + hashlib.sha256(bundle.encode()).hexdigest()] = bundle
        return render.ConfigStore(objects=dict(sorted(objects.items())), manifest=store.manifest)

    render.config_store = one_object_per_role
    try:
        yield
    finally:
        render.config_store = original


if __name__ == "__main__":
    from slurmstack import cli

    sys.argv = ["slurmstack", *sys.argv[1:]]
    with patched():
        cli.main()
