"""Rules in slurmstack.checks.slurm: each case triggers exactly its rule."""

from __future__ import annotations

import pytest

from slurmstack.checks.slurm import (
    DROPPED_AFTER_KEYS,
    KNOWN_SLURM_KEYS,
    MANAGED_SLURM_KEYS,
    NEWER_KEYS,
    REMOVED_KEYS,
)
from slurmstack.findings import Level
from support.checks import Case, check_case, definition, findings, set_in

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
    ),
    Case(
        "slurm-setting-version",
        settings(SlurmctldPlugstack="/etc/slurm/plugstack.d"),
        "slurm.settings.SlurmctldPlugstack",
        "SlurmctldPlugstack was removed in Slurm 23.02; the nodes run Slurm 23.11",
    ),
    Case(
        "slurm-setting-version",
        settings(HashPlugin="hash/k12"),
        "slurm.settings.HashPlugin",
        "HashPlugin first appears in Slurm 24.05; the nodes run Slurm 23.11",
        name="newer",
    ),
    Case(
        "slurm-setting-version",
        settings(jobcredentialprivatekey="/etc/slurm/cred.key"),
        "slurm.settings.jobcredentialprivatekey",
        "JobCredentialPrivateKey was defunct in Slurm 23.11",
        name="defunct",
    ),
    Case(
        "slurm-setting-dropped-later",
        settings(CoreSpecPlugin="core_spec/none"),
        "slurm.settings.CoreSpecPlugin",
        "works on Slurm 23.11 but Slurm 24.05 dropped it",
        level=W,
    ),
    Case(
        "slurm-setting-managed",
        settings(AccountingStorageType="accounting_storage/slurmdbd"),
        "slurm.settings.AccountingStorageType",
        "managed by slurm.accounting",
        name="accounting",
    ),
    Case(
        "slurm-setting-managed",
        settings(priorityweightfairshare=1000),
        "slurm.settings.priorityweightfairshare",
        "managed by slurm.accounting",
        name="fairshare",
    ),
    Case(
        "slurm-setting-unprovisioned",
        settings(SuspendTime=600),
        "slurm.settings.SuspendTime",
        "managed by pools[].max_count",
        name="power-saving",
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


@pytest.mark.parametrize(
    "key", ["MaxBatchRequeue", "PreemptParameters", "SuspendExcStates", "MaxJobCount"]
)
def test_keys_of_23_02_and_23_11_are_accepted(key: str) -> None:
    """Valid on the nodes' Slurm 23.11 though Debian 12's 22.05 lacks some of them."""
    value = "DYNAMIC_NORM" if key == "SuspendExcStates" else "5"
    found = findings(definition(settings(**{key: value})))
    assert [f for f in found if f.path == f"slurm.settings.{key}"] in (
        [],
        # SuspendExcStates is a power-saving key: refused for that reason only.
        [f for f in found if f.rule == "slurm-setting-unprovisioned"],
    )
    assert all(f.rule == "slurm-setting-unprovisioned" for f in found), found


def test_the_version_tables_do_not_overlap_the_23_11_keys() -> None:
    known = {k.lower() for k in KNOWN_SLURM_KEYS}
    assert not known & {k.lower() for k in REMOVED_KEYS}
    assert not known & {k.lower() for k in NEWER_KEYS}
    assert {k.lower() for k in DROPPED_AFTER_KEYS} <= known
    # 223 live keys in the 23.11 table, less FastSchedule (parsed only to stop), plus Include.
    assert len(KNOWN_SLURM_KEYS) == 223
