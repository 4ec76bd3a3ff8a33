"""Rules in slurmstack.checks.slurm: each case triggers exactly its rule."""

from __future__ import annotations

from typing import Any

import pytest

from slurmstack.checks.slurm import MANAGED_SLURM_KEYS, dropped_after, key_state, known_keys
from slurmstack.checks.slurm_keys import KEY_HISTORY
from slurmstack.findings import Level
from slurmstack.slurm_releases import line_of, version_of_record
from support.checks import Case, check_case, definition, findings, set_in

W = Level.WARNING


def both(*steps: Any) -> Any:
    def mutate(data: dict[str, Any]) -> None:
        for step in steps:
            step(data)

    return mutate


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
        "SlurmctldPlugstack was removed in Slurm 23.02; the nodes run Slurm 26.05",
    ),
    Case(
        "slurm-setting-version",
        settings(PowerPlugin="power/none"),
        "slurm.settings.PowerPlugin",
        "PowerPlugin was defunct in Slurm 24.05; the nodes run Slurm 26.05",
        name="dropped-since-23-11",
    ),
    Case(
        "slurm-setting-version",
        set_in("slurm", {"version": "24.11.5", "settings": {"CliFilterParameters": "cli_json"}}),
        "slurm.settings.CliFilterParameters",
        "CliFilterParameters first appears in Slurm 25.11; the nodes run Slurm 24.11",
        name="newer",
        also=("slurm-version-supported",),
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
        set_in("slurm", {"version": "24.11.5", "settings": {"GetEnvTimeout": 2}}),
        "slurm.settings.GetEnvTimeout",
        "works on Slurm 24.11 but Slurm 25.05 dropped it",
        level=W,
        also=("slurm-version-supported",),
    ),
    Case(
        "slurm-version-pinned",
        set_in("slurm.version", "26.05.4"),
        "slurm.version",
        "Slurm 26.05.4 has no pinned source (image_pins.json records the tarball and sha256 of "
        "24.11.5, 26.05.5)",
    ),
    Case(
        "slurm-version-supported",
        set_in("slurm.version", "24.11.5"),
        "slurm.version",
        "SchedMD's support of Slurm 24.11 ended in 2026-05",
        level=W,
    ),
    Case(
        "slurm-version-order",
        both(set_in("slurm.version", "24.11.5"), set_in("pools.0.slurm_version", "26.05.5")),
        "pools[0].slurm_version",
        "26.05.5 is newer than slurm.version 24.11.5, the Slurm of the head's slurmctld",
        also=frozenset({"slurm-version-supported"}),
        name="ahead",
    ),
    Case(
        "slurm-version-order",
        set_in("pools.0.slurm_version", "25.11.2"),
        "pools[0].slurm_version",
        "Slurm 25.11.2 has no pinned source",
        name="unpinned",
    ),
    Case(
        "slurm-upgrade-from",
        set_in("slurm.upgrade_from", "23.11.4"),
        "slurm.upgrade_from",
        "upgrade through 24.11 first",
        name="past-the-window",
    ),
    Case(
        "slurm-upgrade-from",
        both(set_in("slurm.version", "24.11.5"), set_in("slurm.upgrade_from", "26.05.5")),
        "slurm.upgrade_from",
        "26.05.5 is newer than slurm.version 24.11.5",
        also=frozenset({"slurm-version-supported"}),
        name="newer",
    ),
    Case(
        "slurm-upgrade-from",
        set_in("slurm.upgrade_from", "26.05.5"),
        "slurm.upgrade_from",
        "the same as slurm.version (26.05.5): nothing to keep",
        level=W,
        name="same",
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
        "slurm-setting-unprovisioned",
        settings(TopologyPlugin="topology/tree"),
        "slurm.settings.TopologyPlugin",
        "must name every node",
        name="topology",
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
    every = {k.lower() for k in KEY_HISTORY} | {"include"}
    assert every >= MANAGED_SLURM_KEYS
    assert all(k == k.lower() for k in MANAGED_SLURM_KEYS)
    assert {"slurmctldhost", "slurmctldparameters", "maxnodecount", "partitionname"} <= (
        MANAGED_SLURM_KEYS
    )


@pytest.mark.parametrize(
    "key",
    [
        "MaxBatchRequeue",
        "PreemptParameters",
        "MaxJobCount",
        "CliFilterParameters",
        "LicenseParameters",
    ],
)
def test_keys_of_the_version_of_record_are_accepted(key: str) -> None:
    """CliFilterParameters (25.11) and LicenseParameters (26.05) are keys of the nodes' 26.05
    (MetricsType, also 25.11, is slurmstack's own: plan.observability)."""
    found = findings(definition(settings(**{key: "5"})))
    assert [f for f in found if f.path == f"slurm.settings.{key}"] == []


def test_the_key_table_is_read_config_c_of_each_line() -> None:
    """Counts of live keys in slurm_conf_options[] (less FastSchedule, parsed only to stop on
    it, plus Include): 223 at slurm-23-11-0-1 (the count the 23.11 list this table replaced
    had), 226 at 24.11, 239 at 26.05."""
    assert line_of(version_of_record()) == "26.05"
    assert (len(known_keys("23.11")), len(known_keys("24.11")), len(known_keys("26.05"))) == (
        223,
        226,
        239,
    )
    assert key_state("HashPlugin", "23.11") == ("newer", "24.05")
    assert key_state("accountingstorageloc", "26.05") == ("removed", "25.11")
    assert key_state("AccountingStorageUser", "26.05") == ("defunct", "25.11")
    assert dropped_after("FrontendName", "24.11") == "25.05"
    assert dropped_after("MaxJobCount", "26.05") is None


def test_a_pool_lagging_the_head_within_its_window_is_accepted() -> None:
    data = definition(set_in("pools.0.slurm_version", "24.11.5"))
    assert [f for f in findings(data) if f.rule == "slurm-version-order"] == []


def test_settings_are_checked_for_the_oldest_release_a_daemon_runs() -> None:
    """HealthCheckTimeout is new in 26.05: a 24.11 slurmd (a lagging pool) refuses it."""
    data = definition(
        both(set_in("pools.0.slurm_version", "24.11.5"), settings(HealthCheckTimeout=30))
    )
    found = [f for f in findings(data) if f.path == "slurm.settings.HealthCheckTimeout"]
    assert found and "first appears in Slurm 26.05" in found[0].message
