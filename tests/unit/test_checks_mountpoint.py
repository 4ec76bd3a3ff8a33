"""Rules in slurmstack.checks.mountpoint (buckets mounted with Mountpoint for Amazon S3): each
case triggers exactly its rule, at its path, with the fix in its message."""

from __future__ import annotations

from typing import Any

import pytest

from slurmstack.findings import Level
from support.checks import Case, Mutation, check_case

W = Level.WARNING


def s3_mounts(*items: dict[str, Any]) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        data["storage"]["s3_mounts"] = list(items)

    return mutate


CASES = [
    Case(
        "s3-mount-prefix",
        s3_mounts({"mount": "/s3/data", "bucket": "b-1", "prefix": "data"}),
        "storage.s3_mounts[0].prefix",
        "must end with '/'",
    ),
    Case(
        "s3-mount-prefix",
        s3_mounts({"mount": "/s3/all"}),
        "storage.s3_mounts[0].prefix",
        "covers the stack's own config/",
        name="cluster-bucket",
    ),
    Case(
        "s3-mount-flags",
        s3_mounts({"mount": "/s3/d", "bucket": "b-1", "allow_delete": True}),
        "storage.s3_mounts[0].allow_delete",
        "set read_only: false",
    ),
    Case(
        "s3-mount-cache",
        s3_mounts({"mount": "/s3/d", "bucket": "b-1", "cache": True}),
        "storage.s3_mounts[0].cache",
        "pools cpu do not have",
    ),
    Case(
        "s3-mount-region",
        s3_mounts({"mount": "/s3/d", "bucket": "b-1", "bucket_region": "eu-west-1"}),
        "storage.s3_mounts[0].bucket_region",
        "every read crosses Regions",
        level=W,
    ),
    Case(
        "s3-mount-path-in-use",
        s3_mounts({"mount": "/fsx/datasets", "bucket": "b-1"}),
        "storage.s3_mounts[0].mount",
        "a data repository association",
        name="association",
    ),
    Case(
        "s3-mount-path-in-use",
        s3_mounts({"mount": "/scratch/s3", "bucket": "b-1"}),
        "storage.s3_mounts[0].mount",
        "inside /scratch, the pool's NVMe scratch",
        name="scratch",
    ),
    Case(
        "s3-mount-path-in-use",
        s3_mounts({"mount": "/home", "bucket": "b-1"}),
        "storage.s3_mounts[0].mount",
        "already a shared file system (storage.home.mount)",
        name="home",
    ),
    Case(
        "s3-mount-path-in-use",
        s3_mounts({"mount": "/s3", "bucket": "b-1"}, {"mount": "/s3/x", "bucket": "b-2"}),
        "storage.s3_mounts[1].mount",
        "another Mountpoint mount",
        name="nested-s3",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)
