"""Rules in slurmstack.checks.storage: each case triggers exactly its rule."""

from __future__ import annotations

from typing import Any

import pytest

from slurmstack.findings import Level
from support.checks import Case, Mutation, both, check_case, delete, set_in

W = Level.WARNING
EFA_AUTO = frozenset({"lustre-efa-auto"})


def lustre(**values: Any) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        data["storage"]["lustre"].update(values)

    return mutate


def many_p5_on_demand(data: dict[str, Any]) -> None:
    # 130 nodes x 8 LNet EFA interfaces = 1040 connections, over FSx's 1024.
    data["pools"][0].update(count=130, capacity={"type": "on_demand"})


CASES = [
    Case(
        "home-mount-not-home",
        set_in("storage.home.mount", "/shared"),
        "storage.home.mount",
        "would leave each $HOME on the node's own disk",
    ),
    Case(
        "lustre-efa-connections",
        many_p5_on_demand,
        "storage.lustre.efa",
        "1040 EFA connections",
        level=W,
    ),
    Case("mount-reserved", lustre(mount="/usr/fsx"), "storage.lustre.mount", "inside /usr"),
    Case(
        "mount-reserved",
        set_in("pools.0.local_scratch", "/"),
        "pools[0].local_scratch",
        "root file system",
        name="root",
    ),
    Case(
        "mount-reserved",
        set_in("pools.0.local_scratch", "/opt/dlami/nvme"),
        "pools[0].local_scratch",
        "inside /opt/dlami",
        name="dlami",
    ),
    Case("mount-path-form", lustre(mount="/fsx/"), "storage.lustre.mount", "write it as '/fsx'"),
    Case(
        "mount-path-form",
        set_in("pools.0.local_scratch", "/data/../scratch"),
        "pools[0].local_scratch",
        "not a plain absolute path",
        name="dotdot",
    ),
    Case(
        "mount-overlap",
        lustre(mount="/home"),
        "storage.lustre.mount",
        "already used by storage.home.mount",
    ),
    Case(
        "mount-overlap",
        set_in("pools.0.local_scratch", "/fsx/scratch"),
        "pools[0].local_scratch",
        "inside '/fsx'",
        name="scratch-in-lustre",
    ),
    Case(
        "mount-overlap",
        lustre(mount="/home/fsx"),
        "storage.lustre.mount",
        "inside '/home'",
        name="lustre-in-home",
    ),
    Case(
        "lustre-capacity-step",
        lustre(capacity_gib=3000),
        "storage.lustre.capacity_gib",
        "multiple of 2400 GiB); use 4800",
        also=EFA_AUTO,
    ),
    Case(
        "lustre-capacity-step",
        lustre(
            deployment="SCRATCH_1",
            capacity_gib=4800,
            throughput_per_tib=None,
            s3_import_export=None,
        ),
        "storage.lustre.capacity_gib",
        "SCRATCH_1 (1200, 2400, or a multiple of 3600 GiB); use 7200",
        name="scratch1",
    ),
    Case(
        "lustre-capacity-step",
        lustre(
            deployment="PERSISTENT_1", storage_type="HDD", throughput_per_tib=12, capacity_gib=1800
        ),
        "storage.lustre.capacity_gib",
        "multiple of 6000 GiB",
        name="hdd",
    ),
    Case(
        "lustre-throughput",
        lustre(throughput_per_tib=300),
        "storage.lustre.throughput_per_tib",
        "choose one of 125, 250, 500, 1000",
    ),
    Case(
        "lustre-throughput",
        lustre(deployment="SCRATCH_2"),
        "storage.lustre.throughput_per_tib",
        "only for PERSISTENT_1 and PERSISTENT_2",
        name="scratch",
    ),
    Case(
        "lustre-throughput",
        lustre(
            deployment="PERSISTENT_1", storage_type="HDD", throughput_per_tib=50, capacity_gib=6000
        ),
        "storage.lustre.throughput_per_tib",
        "PERSISTENT_1 HDD; choose one of 12, 40",
        name="hdd",
    ),
    Case(
        "lustre-hdd",
        lustre(storage_type="HDD"),
        "storage.lustre.storage_type",
        "only offered with PERSISTENT_1",
    ),
    Case(
        "lustre-metadata-iops-deployment",
        lustre(deployment="PERSISTENT_1", throughput_per_tib=200, metadata_iops=3000),
        "storage.lustre.metadata_iops",
        "only for PERSISTENT_2",
    ),
    Case(
        "lustre-metadata-iops-value",
        lustre(metadata_iops=5000),
        "storage.lustre.metadata_iops",
        "next: 6000",
    ),
    Case(
        "lustre-efa",
        lustre(efa=True, capacity_gib=24000),
        "storage.lustre.efa",
        "grows in 19200 GiB units",
    ),
    Case(
        "lustre-efa",
        lustre(efa=True, deployment="SCRATCH_2", throughput_per_tib=None),
        "storage.lustre.efa",
        "EFA needs PERSISTENT_2",
        name="deployment",
    ),
    Case(
        "lustre-efa-auto",
        lustre(capacity_gib=24000),
        "storage.lustre.capacity_gib",
        "use 38400",
        level=W,
    ),
    Case(
        "lustre-s3-prefix",
        lustre(s3_import_export="/datasets/"),
        "storage.lustre.s3_import_export",
        "starts with '/'",
    ),
    Case(
        "lustre-s3-prefix",
        lustre(s3_import_export="data//sets/"),
        "storage.lustre.s3_import_export",
        "empty, '.' or '..' segment",
        name="segment",
    ),
    Case(
        "lustre-s3-prefix",
        lustre(s3_import_export="data sets/"),
        "storage.lustre.s3_import_export",
        "contains ' '",
        name="chars",
    ),
    Case(
        "lustre-s3-deployment",
        lustre(deployment="SCRATCH_1", capacity_gib=3600, throughput_per_tib=None),
        "storage.lustre.s3_import_export",
        "SCRATCH_1 file systems take no data repository association",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


def test_no_lustre_means_no_lustre_findings() -> None:
    from support.checks import definition, findings

    found = findings(definition(delete("storage.lustre")))
    assert not [f for f in found if f.rule.startswith("lustre")]


def test_home_null_frees_home_mount_point() -> None:
    from support.checks import definition, findings

    found = findings(definition(both(set_in("storage.home", None), lustre(mount="/home"))))
    assert not [f for f in found if f.rule.startswith("mount")]
