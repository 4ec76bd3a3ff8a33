"""Stand-in "fsx-associations" (standins.py): what FSx does for the data repository
associations the program registered, between moto's S3 and the shared directory that stands in
for the stack's Lustre file system (stand-in "shared-storage").

FSx for Lustre User Guide, "Linking your file system to an Amazon S3 bucket": an association
with batch import loads the metadata of the objects under its prefix when it is created (files
appear in its directory; data loads on first read); automatic import brings in objects created
later when its policy lists NEW; automatic export writes new files back under the prefix when
its policy lists NEW. Here data is copied whole (there is no lazy load to imitate) and
``sync`` runs when a scenario asks, not on S3 events. Only what the program registered decides
what moves where: nothing here reads the definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurmstack.offline import OfflineRun

ASSOCIATION = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
NEW = "NEW"


@dataclass(frozen=True)
class Association:
    path: str  # fileSystemPath
    bucket: str
    prefix: str  # "" or ending in "/"
    import_events: frozenset[str]
    export_events: frozenset[str]
    batch_import: bool

    def directory(self, lustre: Path) -> Path:
        return lustre / self.path.lstrip("/")


def registered(run: OfflineRun) -> list[Association]:
    out = []
    for each in run.of_type(ASSOCIATION):
        inputs = each.inputs
        bucket, _, prefix = str(inputs["dataRepositoryPath"]).removeprefix("s3://").partition("/")
        s3 = inputs.get("s3") or {}
        out.append(
            Association(
                path=str(inputs["fileSystemPath"]),
                bucket=bucket,
                prefix=prefix,
                import_events=frozenset((s3.get("autoImportPolicy") or {}).get("events", [])),
                export_events=frozenset((s3.get("autoExportPolicy") or {}).get("events", [])),
                batch_import=bool(inputs.get("batchImportMetaDataOnCreate")),
            )
        )
    return out


def _objects(s3: Any, association: Association) -> dict[str, str]:
    """Relative path under the association's directory -> object key, of every object under
    its prefix (directory markers left out)."""
    found = {}
    pages = s3.get_paginator("list_objects_v2").paginate(
        Bucket=association.bucket, Prefix=association.prefix
    )
    for page in pages:
        for item in page.get("Contents", []):
            key = str(item["Key"])
            relative = key[len(association.prefix) :]
            if relative and not relative.endswith("/"):
                found[relative] = key
    return found


def _import(s3: Any, association: Association, lustre: Path, only_new: bool) -> list[str]:
    directory = association.directory(lustre)
    done = []
    for relative, key in sorted(_objects(s3, association).items()):
        target = directory / relative
        if only_new and target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(s3.get_object(Bucket=association.bucket, Key=key)["Body"].read())
        done.append(f"{association.path}/{relative}")
    return done


def create(s3: Any, associations: list[Association], lustre: Path) -> list[str]:
    """Each association created, in the program's order: its directory made, and with batch
    import, its prefix's objects there. Returns the files imported."""
    done = []
    for association in associations:
        association.directory(lustre).mkdir(parents=True, exist_ok=True)
        if association.batch_import:
            done += _import(s3, association, lustre, only_new=False)
    return done


def sync(s3: Any, associations: list[Association], lustre: Path) -> tuple[list[str], list[str]]:
    """One pass of automatic import (new objects, where NEW is an import event) and automatic
    export (new files, where NEW is an export event). Returns (imported, exported) as file
    system paths."""
    imported: list[str] = []
    exported: list[str] = []
    for association in associations:
        if NEW in association.import_events:
            imported += _import(s3, association, lustre, only_new=True)
        if NEW in association.export_events:
            known = _objects(s3, association)
            directory = association.directory(lustre)
            for file in sorted(p for p in directory.rglob("*") if p.is_file()):
                relative = file.relative_to(directory).as_posix()
                if relative not in known:
                    key = association.prefix + relative
                    s3.put_object(Bucket=association.bucket, Key=key, Body=file.read_bytes())
                    exported.append(f"{association.path}/{relative}")
    return imported, exported
