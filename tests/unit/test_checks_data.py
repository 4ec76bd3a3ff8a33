"""Rules in slurmstack.checks.data (existing file systems, associations; Mountpoint's are in
test_checks_mountpoint): each case triggers exactly its rule, at its path, with the fix in its
message."""

from __future__ import annotations

from typing import Any

import pytest

from slurmstack.findings import Level
from support.checks import Case, Mutation, both, check_case, definition, findings, set_in

W = Level.WARNING
FS = "fs-0123456789abcdef0"
VPC = {
    "vpc_id": "vpc-0123456789abcdef0",
    "compute_subnet_id": "subnet-0123456789abcdef0",
    "compute_subnet_cidr": "10.42.0.0/17",
}


def associations(*items: dict[str, Any]) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        data["storage"]["lustre"]["associations"] = list(items)

    return mutate


def s3_mounts(*items: dict[str, Any]) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        data["storage"]["s3_mounts"] = list(items)

    return mutate


def existing(*items: dict[str, Any], vpc: bool = True) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        data["storage"]["existing"] = list(items)
        if vpc:
            data["network"] = dict(VPC)

    return mutate


CASES = [
    # Existing file systems.
    Case(
        "existing-needs-vpc",
        existing({"type": "lustre", "file_system_id": FS, "mount": "/data"}, vpc=False),
        "storage.existing[0].file_system_id",
        "set network.vpc_id",
    ),
    Case(
        "existing-once",
        existing(
            {"type": "lustre", "file_system_id": FS, "mount": "/data"},
            {"type": "lustre", "file_system_id": FS, "mount": "/data2"},
        ),
        "storage.existing[1].file_system_id",
        "already mounted by storage.existing[0]",
    ),
    Case(
        "home-openzfs",
        set_in("storage.home", {"type": "openzfs"}),
        "storage.home.file_system_id",
        "give its file_system_id",
    ),
    Case(
        "mount-overlap",
        existing({"type": "efs", "file_system_id": FS, "mount": "/fsx/shared"}),
        "storage.existing[0].mount",
        "inside '/fsx'",
        name="existing",
    ),
    # Associations.
    Case(
        "association-count",
        associations(*({"path": f"/d{i}", "prefix": f"d{i}/"} for i in range(8))),
        "storage.lustre.associations",
        "9 data repository associations",
    ),
    Case(
        "association-deployment",
        both(
            set_in("storage.lustre.deployment", "SCRATCH_1"),
            set_in("storage.lustre.capacity_gib", 3600),
            set_in("storage.lustre.throughput_per_tib", None),
            set_in("storage.lustre.s3_import_export", None),
            associations({"path": "/d", "prefix": "d/"}),
        ),
        "storage.lustre.associations",
        "SCRATCH_1 file systems take no data repository association",
    ),
    Case(
        "association-paths",
        associations({"path": "/datasets", "bucket": "other-bucket"}),
        "storage.lustre.associations[0].path",
        "already linked by storage.lustre.s3_import_export",
        name="same",
    ),
    Case(
        "association-paths",
        associations({"path": "/datasets/imagenet", "bucket": "other-bucket"}),
        "storage.lustre.associations[0].path",
        "nest",
        name="nested",
    ),
    Case(
        "association-paths",
        associations({"path": "/", "bucket": "other-bucket"}),
        "storage.lustre.associations[0].path",
        "can be the only association",
        name="root",
    ),
    Case(
        "association-repositories",
        associations({"path": "/again", "prefix": "datasets/"}),
        "storage.lustre.associations[0]",
        "already linked by storage.lustre.s3_import_export",
        name="same",
    ),
    Case(
        "association-repositories",
        associations({"path": "/sub", "prefix": "datasets/sub/"}),
        "storage.lustre.associations[0]",
        "nest",
        level=W,
        name="nested",
    ),
    Case(
        "association-repositories",
        associations({"path": "/x", "bucket": "b-1", "prefix": "no-slash"}),
        "storage.lustre.associations[0].prefix",
        "must end with '/'",
        name="prefix",
    ),
    Case(
        "association-region",
        associations({"path": "/x", "bucket": "b-1", "bucket_region": "eu-west-1"}),
        "storage.lustre.associations[0].bucket_region",
        "imports automatically only from its own Region",
    ),
    Case(
        "association-region",
        associations(
            {"path": "/x", "bucket": "b-1", "bucket_region": "eu-west-1", "import_events": []}
        ),
        "storage.lustre.associations[0].bucket_region",
        "crosses Regions",
        level=W,
        name="no-import",
    ),
    Case(
        "mount-reserved",
        s3_mounts({"mount": "/usr/data", "bucket": "b-1"}),
        "storage.s3_mounts[0].mount",
        "inside /usr",
        name="s3",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


def test_a_full_data_definition_has_no_finding() -> None:
    """Everything at once, as docs/data.md shows it: no rule fires."""
    data = definition(
        both(
            existing(
                {"type": "lustre", "file_system_id": FS, "mount": "/datasets"},
                {
                    "type": "openzfs",
                    "file_system_id": "fs-0fedcba9876543210",
                    "mount": "/shared",
                    "export_path": "/fsx/shared",
                },
            ),
            set_in("storage.home", {"type": "efs", "file_system_id": "fs-0a1b2c3d"}),
            associations(
                {"path": "/checkpoints", "prefix": "checkpoints/", "import_events": []},
                {
                    "path": "/imagenet",
                    "bucket": "team-datasets",
                    "prefix": "imagenet/",
                    "export_events": [],
                },
            ),
            s3_mounts(
                {"mount": "/s3/datasets", "bucket": "team-datasets", "prefix": "text/"},
                {"mount": "/s3/export", "prefix": "exports/", "read_only": False},
            ),
        )
    )
    assert findings(data) == []


def test_eight_associations_are_allowed() -> None:
    data = definition(associations(*({"path": f"/d{i}", "prefix": f"d{i}/"} for i in range(7))))
    assert [f.line() for f in findings(data)] == []
