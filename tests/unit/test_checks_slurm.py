"""Rules in slurmstack.checks.slurm: each case triggers exactly its rule."""

from __future__ import annotations

import pytest
from checks_support import Case, check_case, set_in

from slurmstack.checks.slurm import KNOWN_SLURM_KEYS, MANAGED_SLURM_KEYS
from slurmstack.findings import Level

W = Level.WARNING


def settings(**values: object) -> object:
    return set_in("slurm.settings", values)


CASES = [
    Case(
        "default-partition-unknown",
        set_in("slurm.default_partition", "trian"),
        "slurm.default_partition",
        "did you mean 'train'",
    ),
    Case(
        "slurm-setting-managed",
        settings(SlurmctldHost="other"),
        "slurm.settings.SlurmctldHost",
        "SlurmctldHost is managed by slurmstack",
    ),
    Case(
        "slurm-setting-managed",
        settings(selecttype="select/linear"),
        "slurm.settings.selecttype",
        "managed by slurmstack",
        name="case",
    ),
    Case(
        "slurm-setting-duplicate",
        set_in("slurm.settings", {"MaxJobCount": 1, "maxjobcount": 2}),
        "slurm.settings.maxjobcount",
        "repeats MaxJobCount",
    ),
    Case(
        "slurm-setting-key",
        set_in("slurm.settings", {"Max Job Count": 1}),
        "slurm.settings.Max Job Count",
        "is not a slurm.conf key",
    ),
    Case(
        "slurm-setting-unknown",
        settings(MaxJobCnt=10),
        "slurm.settings.MaxJobCnt",
        "did you mean 'MaxJobCount'",
        level=W,
    ),
    Case(
        "slurm-setting-value",
        settings(SchedulerParameters="bf_continue\nNodeName=evil"),
        "slurm.settings.SchedulerParameters",
        "line break",
    ),
    Case(
        "slurm-setting-value",
        settings(SchedulerParameters="bf_continue # fast"),
        "slurm.settings.SchedulerParameters",
        "starts a slurm.conf comment",
        name="hash",
    ),
    Case(
        "slurm-setting-bool",
        settings(DisableRootJobs=True),
        "slurm.settings.DisableRootJobs",
        "quote it",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    check_case(case)


def test_managed_keys_are_lowercase_slurm_keys() -> None:
    known = {k.lower() for k in KNOWN_SLURM_KEYS}
    assert known >= MANAGED_SLURM_KEYS
    assert all(k == k.lower() for k in MANAGED_SLURM_KEYS)
    assert {"slurmctldhost", "slurmctldparameters", "maxnodecount", "partitionname"} <= (
        MANAGED_SLURM_KEYS
    )
