"""The power programs' pure decisions, tested as tables: which powered-down elastic node the
sweep returns to service (sweep_verdict), which launched instance no node owns any more
(stray_instances), which pool a node name is of, and a pool's launch back-off."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import pytest

from slurmstack.contract import ElasticPool, LaunchRetry
from slurmstack.node.power.nodes import Instance, by_pool, pool_of
from slurmstack.node.power.retry import RetryState
from slurmstack.node.power.sweep import ORPHAN_GRACE_SECONDS, stray_instances, sweep_verdict
from slurmstack.node.slurm import NodeRecord

NOW = 1_750_000_000.0
LAUNCH_FAILED = "slurmstack:launch: InsufficientInstanceCapacity: none in us-east-1a"


def node(state: str, reason: str = "", address: str = "gpu-e1", name: str = "gpu-e1") -> NodeRecord:
    fields = {"NodeName": name, "NodeAddr": address, "State": state}
    if reason:
        fields.update(Reason=reason, ReasonUser="slurm", ReasonTime="2025-06-15T15:00:00")
    return NodeRecord.of(fields)


@dataclass(frozen=True)
class Verdict:
    id: str
    record: NodeRecord
    retry_due: bool
    want: str | None  # None: back to service; else the start of why it stays


VERDICTS = [
    Verdict("running", node("IDLE+CLOUD"), True, "not powered down"),
    Verdict("powering-up", node("IDLE+CLOUD+POWERED_DOWN+POWERING_UP"), True, "not powered down"),
    Verdict("powered-down-and-available", node("IDLE+CLOUD+POWERED_DOWN"), True, "available"),
    Verdict("launch-failed-retry-due", node("DOWN+CLOUD+POWERED_DOWN", LAUNCH_FAILED), True, None),
    Verdict(
        "launch-failed-retry-not-due",
        node("DOWN+CLOUD+POWERED_DOWN", LAUNCH_FAILED),
        False,
        "its pool's launch retry is not due",
    ),
    Verdict(
        "drained-by-a-health-check",
        node("IDLE+DRAIN+CLOUD+POWERED_DOWN", "slurmstack:gpu-xid: 79 fell off the bus"),
        False,
        None,
    ),
    Verdict("slurm-gave-up", node("DOWN+CLOUD+POWERED_DOWN", "ResumeTimeout reached"), False, None),
    Verdict("not-responding", node("DOWN+CLOUD+POWERED_DOWN", "Not responding"), False, None),
    Verdict(
        "stacked-check-and-slurm",
        node("DOWN+DRAIN+CLOUD+POWERED_DOWN", "slurmstack:efa-port: rdmap0 DOWN : Not responding"),
        False,
        None,
    ),
    Verdict(
        "operator",
        node("IDLE+DRAIN+CLOUD+POWERED_DOWN", "RMA ticket 42"),
        True,
        "an operator's reason",
    ),
    Verdict(
        "operator-under-slurm",
        node("DOWN+DRAIN+CLOUD+POWERED_DOWN", "RMA ticket 42 : Not responding"),
        True,
        "an operator's reason",
    ),
    Verdict("down-without-reason", node("DOWN+CLOUD+POWERED_DOWN"), True, "no reason"),
]


@pytest.mark.parametrize("row", VERDICTS, ids=lambda r: r.id)
def test_sweep_verdict(row: Verdict) -> None:
    got = sweep_verdict(row.record, row.retry_due)
    if row.want is None:
        assert got is None
    else:
        assert got is not None and got.startswith(row.want), got


def launched(
    iid: str, node_name: str | None, address: str | None = "10.0.0.5", age: float = 60
) -> Instance:
    at = datetime.datetime.fromtimestamp(NOW - age, tz=datetime.UTC)
    return Instance(iid, "gpu", node_name, address, "running", at)


OLD = ORPHAN_GRACE_SECONDS + 1
STRAYS = [
    ("named-and-running", launched("i-1", "gpu-e1"), node("ALLOCATED+CLOUD", address="10.0.0.5"), None),
    ("never-named-young", launched("i-2", None), None, None),
    ("never-named-old", launched("i-3", None, age=OLD), None, "launched but never named"),
    ("no-such-node", launched("i-4", "gpu-e9"), None, "gpu-e9 is no elastic node"),
    ("powered-down-young", launched("i-5", "gpu-e1"), node("IDLE+CLOUD+POWERED_DOWN"), None),
    (
        "powered-down-old",
        launched("i-6", "gpu-e1", age=OLD),
        node("IDLE+CLOUD+POWERED_DOWN"),
        "gpu-e1 is powered down",
    ),
    (
        "node-runs-elsewhere",
        launched("i-7", "gpu-e1", age=OLD),
        node("ALLOCATED+CLOUD", address="10.0.0.9"),
        "gpu-e1 runs at 10.0.0.9, not at 10.0.0.5",
    ),
    ("no-address-yet", launched("i-8", "gpu-e1", age=OLD), node("ALLOCATED+CLOUD", address=""), None),
]  # fmt: skip


@pytest.mark.parametrize(("id", "instance", "record", "want"), STRAYS, ids=[s[0] for s in STRAYS])
def test_stray_instances(
    id: str, instance: Instance, record: NodeRecord | None, want: str | None
) -> None:
    found = {} if record is None else {"gpu-e1": record}
    got = stray_instances([instance], found, NOW)
    if want is None:
        assert got == {}
    else:
        assert list(got) == [instance.instance_id] and got[instance.instance_id].startswith(want)


POOLS = (
    ElasticPool("gpu", "gpu-e[1-4]", 4, "c-pool-gpu", "p5.48xlarge", "on_demand"),
    ElasticPool("gpu2", "gpu2-e[1-2]", 2, "c-pool-gpu2", "p5.48xlarge", "spot"),
)


@pytest.mark.parametrize(
    ("name", "pool"),
    [("gpu-e1", "gpu"), ("gpu-e4", "gpu"), ("gpu-e5", None), ("gpu-e0", None), ("gpu-e01", None),
     ("gpu2-e2", "gpu2"), ("gpu-17", None), ("login-e1", None)],
)  # fmt: skip
def test_pool_of_a_node_name(name: str, pool: str | None) -> None:
    found = pool_of(name, POOLS)
    assert (found.name if found else None) == pool


def test_by_pool_sorts_names_naturally_and_sets_strangers_apart() -> None:
    grouped, strangers = by_pool(["gpu-e10", "gpu-e2", "gpu2-e1", "x-1", "gpu-e1"], (
        ElasticPool("gpu", "gpu-e[1-10]", 10, "t", "p5.48xlarge", "on_demand"), POOLS[1],
    ))  # fmt: skip
    assert grouped == {"gpu": ["gpu-e1", "gpu-e2", "gpu-e10"], "gpu2": ["gpu2-e1"]}
    assert strangers == ["x-1"]


@pytest.mark.parametrize(
    ("failures", "wait"), [(1, 120), (2, 240), (3, 480), (4, 960), (5, 1800), (9, 1800)]
)
def test_a_pool_waits_longer_after_each_failed_launch(failures: int, wait: int) -> None:
    state, policy = RetryState({}), LaunchRetry()
    for i in range(failures):
        state.failed("gpu", "InsufficientInstanceCapacity", NOW + i, policy)
    last = NOW + failures - 1
    assert not state.due("gpu", last + wait - 1) and state.due("gpu", last + wait)
    state.succeeded("gpu")
    assert state.due("gpu", NOW)
