"""The power programs' pure decisions, tested as tables: which powered-down elastic node the
sweep returns to service (sweep_verdict), which launched instance no node owns any more
(stray_instances), which pool a node name is of, and a pool's launch back-off."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import pytest

from slurmstack.contract import ORPHAN_GRACE_SECONDS, ElasticPool, LaunchRetry
from slurmstack.node.power.nodes import Instance, by_pool, pool_of
from slurmstack.node.power.retry import RetryState
from slurmstack.node.power.sweep import stray_instances, sweep_verdict
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


def launched(iid: str, address: str | None = "10.0.0.5", age: float = 60) -> Instance:
    at = datetime.datetime.fromtimestamp(NOW - age, tz=datetime.UTC)
    return Instance(iid, "gpu", "launch-1", address, "running", at)


def at(state: str, address: str = "10.0.0.5", name: str = "gpu-e1", reason: str = "") -> NodeRecord:
    return node(state, reason, address=address, name=name)


OLD = ORPHAN_GRACE_SECONDS + 1
SCALED_IN = "slurmstack:scale-in: gpu-e9 left the definition"
# (id, the instance, Slurm's record of the node at its address or None, whether that node left
# the definition, the start of why the instance goes or None, the start of the drain reason).
STRAYS = [
    ("owned-and-running", launched("i-1"), at("ALLOCATED+CLOUD"), False, None, None),
    ("owned-powering-up", launched("i-1"), at("IDLE+CLOUD+POWERED_DOWN+POWERING_UP"), False, None, None),
    ("nobody-young", launched("i-2"), None, False, None, None),
    ("nobody-old", launched("i-3", age=OLD), None, False, "no elastic node runs at 10.0.0.5", None),
    ("no-address-old", launched("i-3", address=None, age=OLD), None, False, "no elastic node", None),
    ("powered-down-young", launched("i-5"), at("IDLE+CLOUD+POWERED_DOWN"), False, None, None),
    ("powered-down-old", launched("i-6", age=OLD), at("IDLE+CLOUD+POWERED_DOWN"), False, "no elastic node", None),
    ("node-runs-elsewhere", launched("i-7", age=OLD), at("ALLOCATED+CLOUD", "10.0.0.9"), False,
     "no elastic node", None),
    # A max_count decrease: the node Slurm still holds is drained while it has a job ...
    ("removed-busy", launched("i-8", age=OLD), at("ALLOCATED+CLOUD", name="gpu-e9"), True, None, SCALED_IN),
    ("removed-busy-drained", launched("i-8", age=OLD), at("ALLOCATED+DRAIN+CLOUD", name="gpu-e9"), True, None, None),
    # ... and its instance terminated once it has none.
    ("removed-idle", launched("i-9"), at("IDLE+DRAIN+CLOUD", name="gpu-e9"), True, "gpu-e9 left the definition", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("id", "instance", "record", "removed", "want", "drained"), STRAYS, ids=[s[0] for s in STRAYS]
)
def test_stray_instances(
    id: str,
    instance: Instance,
    record: NodeRecord | None,
    removed: bool,
    want: str | None,
    drained: str | None,
) -> None:
    found = {} if record is None else {record.name: record}
    gone = {record.name} if record is not None and removed else set()
    stray, drain = stray_instances([instance], found, gone, NOW)
    if want is None:
        assert stray == {}
    else:
        assert list(stray) == [instance.instance_id]
        assert stray[instance.instance_id].startswith(want), stray
    if drained is None:
        assert drain == {}
    else:
        assert record is not None and list(drain) == [record.name]
        assert drain[record.name].startswith(drained)


def test_the_grace_is_the_callers() -> None:
    young = launched("i-1", age=31)
    assert stray_instances([young], {}, set(), NOW, grace=30)[0] == {
        "i-1": "no elastic node runs at 10.0.0.5 (31 s after its launch)"
    }
    assert stray_instances([young], {}, set(), NOW)[0] == {}  # the default: 600 s


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
