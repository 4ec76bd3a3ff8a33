"""decide, tested as a table: one observed node (its Slurm record, its instance, how its group
sees it), the controller's memory and the policy in; the actions out."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from slurmstack.contract import PoolRef
from slurmstack.node.controller.actions import Kind
from slurmstack.node.controller.decide import decide, pool_finder, pool_of
from slurmstack.node.controller.observe import Instance, Member, Observed
from slurmstack.node.controller.repair import cause_of_node
from slurmstack.node.controller.state import ControllerState, Trip, Waiting
from slurmstack.node.slurm import NodeRecord
from slurmstack.plan.health import plan_health
from slurmstack.spec import HealthSpec

NOW = 1_750_000_000.0  # 2025-06-15T15:06:40Z
POLICY = plan_health(
    HealthSpec(breaker={"replacements": 2, "window_minutes": 60}, scale_in_wait_minutes=30)
).repair
POOL = PoolRef("gpu", "gpu-", "gpu", group="vc-pool-gpu")
BLOCK = PoolRef(
    "train", "train-", "train", group="vc-pool-train", capacity_type="capacity_block",
    reservation_id="cr-0123456789abcdef0",
)  # fmt: skip
USERS = frozenset({"slurm", "64030"})
ADDRESS = "10.99.1.7"
NAME = "gpu-263"  # 10.99.1.7 & 0xffff
ID = "i-0aaa"
RECENT = "2025-06-15T15:00:00"  # six minutes before NOW (UTC; the tests run with TZ=UTC)
LONG_AGO = "2025-06-15T13:00:00"


def record(
    state: str = "IDLE+DYNAMIC_NORM", reason: str = "", user: str = "root", **more: str
) -> NodeRecord:
    node = {
        "NodeName": NAME,
        "NodeAddr": ADDRESS,
        "State": state,
        "AvailableFeatures": "gpu",
        "CPUAlloc": "0",
    }
    if reason:
        node.update(Reason=reason, ReasonUser=user, ReasonTime=RECENT)
    node.update(more)
    return NodeRecord.of(node)


@dataclass
class Row:
    id: str
    node: NodeRecord
    actions: list[tuple[str, str]]  # (kind, start of the reason or of why)
    instance: bool = True
    lifecycle: str = "InService"
    health: str = "Healthy"
    state: ControllerState = field(default_factory=ControllerState)
    pool: PoolRef = POOL
    shipped: bool = False
    ends: dict[str, float] = field(default_factory=dict)


def observe(row: Row) -> Observed:
    instances = (Instance(ID, ADDRESS, row.pool.name, "running"),) if row.instance else ()
    members = (
        (Member(ID, row.pool.group, row.pool.name, row.lifecycle, row.health),)
        if row.instance
        else ()
    )
    # A breaker open since an earlier pass has already suspended its group's replacements.
    suspended = frozenset({"ReplaceUnhealthy"}) if row.pool.name in row.state.breakers else None
    return Observed(
        NOW, (row.node,), USERS, aws=True, instances=instances, members=members,
        suspended={row.pool.group: suspended or frozenset()}, reservation_ends=row.ends,
        logs_shipped=frozenset({ID}) if row.shipped else frozenset(),
    )  # fmt: skip


XID_79 = "slurmstack:gpu-xid: 79 pid=1, GPU has fallen off the bus (PCI:0000:10:1c)"
# A reboot-worthy XID as a node drains with it (data/kernel/xid-109-ctxsw-timeout.log).
XID_109 = (
    "slurmstack:gpu-xid: 109 pid=1797828, name=pt_main_thread, Ch 00000008, errorString CTX "
    "SWITCH TIMEOUT, Info 0x58005 (PCI:0000:cb:00)"
)
REBOOTED = ControllerState(reboots={NAME: (NOW - 3600, "gpu-xid:109")})
TWO_REPLACED = ControllerState(replacements={"gpu": ((NOW - 600, "i-1"), (NOW - 300, "i-2"))})
OPEN = ControllerState(breakers={"gpu": Trip(NOW - 60, "2 replacements in 60 min")})

ROWS = [
    Row("healthy", record(), []),
    Row("idle-drained-by-someone", record("IDLE+DRAIN+DYNAMIC_NORM", "bios update"), []),
    Row("xid-79-replace", record("MIXED+DRAIN+DYNAMIC_NORM", XID_79, CPUAlloc="8"),
        [("replace", XID_79 + "; replacing i-0aaa")]),
    Row("xid-109-reboot", record("IDLE+DRAIN+DYNAMIC_NORM", XID_109),
        [("reboot", XID_109 + "; rebooting")]),
    Row("xid-109-back-after-a-reboot", record("IDLE+DRAIN+DYNAMIC_NORM", XID_109),
        [("replace", XID_109 + "; replacing")], state=REBOOTED),
    Row("reboot-under-way", record("IDLE+DRAIN+DYNAMIC_NORM+REBOOT_ISSUED", XID_109), []),
    Row("replacement-under-way", record("DOWN+DYNAMIC_NORM", XID_79 + "; replacing i-0aaa"), []),
    Row("unhealthy-in-its-group", record("DOWN+DYNAMIC_NORM", XID_79), [], health="Unhealthy"),
    Row("file-system-left", record("IDLE+DRAIN+DYNAMIC_NORM", "slurmstack:file-system: /fsx"), []),
    Row("disk-full-left", record("IDLE+DRAIN+DYNAMIC_NORM", "slurmstack:disk-full: / 97%"), []),
    Row("unknown-check-left", record("IDLE+DRAIN+DYNAMIC_NORM", "slurmstack:nccl-slow: 12 GB/s"),
        []),
    Row("operator-replace-idle", record("IDLE+DRAIN+DYNAMIC_NORM", "Action:Replace"),
        [("replace", "Action:Replace; replacing i-0aaa")]),
    Row("operator-replace-waits-for-jobs",
        record("MIXED+DRAIN+DYNAMIC_NORM", "Action:Replace", CPUAlloc="4"), []),
    Row("operator-replace-down", record("DOWN+DYNAMIC_NORM", "bad fan Action:Replace"),
        [("replace", "bad fan Action:Replace; replacing")]),
    Row("operator-reboot", record("IDLE+DRAIN+DYNAMIC_NORM", "Action:Reboot please"),
        [("reboot", "Action:Reboot please; rebooting")]),
    Row("slurm-kill-task-failed", record("IDLE+DRAIN+DYNAMIC_NORM", "Kill task failed", "slurm"),
        [("reboot", "Kill task failed; rebooting")]),
    Row("slurm-not-responding-instance-runs",
        record("DOWN+DYNAMIC_NORM+NOT_RESPONDING", "Not responding", "slurm"),
        [("replace", "Not responding; replacing")]),
    Row("not-responding-as-someone-else",
        record("DOWN+DYNAMIC_NORM+NOT_RESPONDING", "Not responding", "alice"), []),
    Row("breaker-trips", record("IDLE+DRAIN+DYNAMIC_NORM", XID_79),
        [("suspend", "breaker tripped"), ("hold", XID_79 + "; held: pool gpu's breaker")],
        state=TWO_REPLACED),
    Row("breaker-open-holds", record("IDLE+DRAIN+DYNAMIC_NORM", XID_79),
        [("hold", XID_79 + "; held: pool gpu's breaker is open since")], state=OPEN),
    Row("breaker-open-already-held",
        record("IDLE+DRAIN+DYNAMIC_NORM", XID_79 + "; held: pool gpu's breaker is open"), [],
        state=OPEN),
    Row("instance-gone-busy", record("ALLOCATED+DYNAMIC_NORM", CPUAlloc="96"),
        [("down", "slurmstack:instance-gone: no live instance of the cluster at 10.99.1.7")],
        instance=False),
    Row("instance-gone-keeps-an-operators-reason",
        record("IDLE+DRAIN+DYNAMIC_NORM", "bios update"),
        [("down", "bios update : slurmstack:instance-gone:")], instance=False),
    Row("instance-gone-after-replacement",
        record("DOWN+DYNAMIC_NORM", XID_79 + "; replacing i-0aaa"),
        [("down", "slurmstack:instance-gone: no live instance of the cluster at 10.99.1.7 (was:")],
        instance=False),
    # Slurm set it DOWN (not responding) before the pass saw its instance gone: the operator's
    # Action:Replace, which the controller carried out, is not kept for the operator.
    Row("instance-gone-after-an-operators-replacement",
        record("DOWN+DYNAMIC_NORM+NOT_RESPONDING", "Action:Replace; replacing i-0aaa"),
        [("down", "slurmstack:instance-gone: no live instance of the cluster at 10.99.1.7 (was: "
                  "Action:Replace; replacing i-0aaa)")],
        instance=False),
    Row("instance-gone-already-said", record(
        "DOWN+DYNAMIC_NORM", "slurmstack:instance-gone: no live instance"), [], instance=False),
    Row("instance-gone-long-ago-reaped", record(
        "DOWN+DYNAMIC_NORM", "slurmstack:instance-gone: no live instance", ReasonTime=LONG_AGO),
        [("reap", "no live instance")], instance=False),
    Row("powered-down-cloud-node", record("IDLE+CLOUD+POWERED_DOWN"), [], instance=False),
    # Elastic (CLOUD) nodes are the power programs': a failed launch, a drained running node
    # (Slurm powers it down, terminating its instance) or one powering up is left to them.
    Row("elastic-launch-failed", record(
        "DOWN+CLOUD+POWERED_DOWN", "slurmstack:launch: InsufficientInstanceCapacity: none",
        NodeName="gpu-e1"), [], instance=False),
    Row("elastic-drained-running", record("IDLE+DRAIN+CLOUD", XID_79, NodeName="gpu-e2"), []),
    Row("elastic-powering-up", record("ALLOCATED+CLOUD+POWERING_UP", NodeName="gpu-e3"), [],
        instance=False),
    Row("scale-in-drains-and-waits-for-jobs",
        record("ALLOCATED+DYNAMIC_NORM", CPUAlloc="96"),
        [("drain", "slurmstack:scale-in: vc-pool-gpu is terminating i-0aaa: draining"),
         ("heartbeat", "its node still runs jobs")], lifecycle="Terminating:Wait"),
    Row("scale-in-idle-waits-for-logs",
        record("IDLE+DRAIN+DYNAMIC_NORM", "slurmstack:scale-in: x"),
        [("heartbeat", "waiting for its logs")], lifecycle="Terminating:Wait"),
    Row("scale-in-idle-logs-in", record("IDLE+DRAIN+DYNAMIC_NORM", "slurmstack:scale-in: x"),
        [("complete", "its node has no job; logs in the bucket")], lifecycle="Terminating:Wait",
        shipped=True),
    Row("scale-in-waited-out", record("ALLOCATED+DRAIN+DYNAMIC_NORM", "slurmstack:scale-in: x",
        CPUAlloc="96"), [("complete", "jobs still ran after 40 min; no logs")],
        lifecycle="Terminating:Wait",
        state=ControllerState(terminating={ID: Waiting(NOW - 2400)})),
    Row("capacity-block-far-from-its-end", record(), [], pool=BLOCK,
        ends={BLOCK.reservation_id: NOW + 4 * 3600}),
    Row("capacity-block-ends-soon", record(),
        [("drain", "slurmstack:capacity-block-end: cr-0123456789abcdef0 ends 2025-06-15T16:36:40Z"
          ": EC2 terminates its instances from 2025-06-15T16:06:40Z")],
        pool=BLOCK, ends={BLOCK.reservation_id: NOW + 90 * 60}),
]  # fmt: skip


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_decide(row: Row) -> None:
    node = row.node
    if row.pool is BLOCK:
        node = NodeRecord.of({**node.fields, "NodeName": "train-263", "AvailableFeatures": "train"})
    observed = replace(observe(row), nodes=(node,))
    decision = decide(observed, (POOL, BLOCK), POLICY, row.state)
    got = [(a.kind.value, a.reason or a.why) for a in decision.actions]
    assert len(got) == len(row.actions), got
    for (kind, text), (want_kind, want) in zip(got, row.actions, strict=True):
        assert kind == want_kind and text.startswith(want), (kind, text)


def test_a_replacement_counts_once_and_the_breaker_trips_on_the_next() -> None:
    row = Row("x", record("IDLE+DRAIN+DYNAMIC_NORM", XID_79), [])
    first = decide(observe(row), (POOL,), POLICY, ControllerState())
    assert [a.kind for a in first.actions] == [Kind.REPLACE]
    assert first.state.recent("gpu", NOW, POLICY) == 1
    # The same node seen again while its group works: nothing more, still one.
    again = decide(observe(replace(row, health="Unhealthy")), (POOL,), POLICY, first.state)
    assert again.actions == () and again.state.recent("gpu", NOW, POLICY) == 1
    # A boot that failed elsewhere in the pool marked its instance Unhealthy: counted too.
    other = Member("i-0bbb", POOL.group, "gpu", "InService", "Unhealthy")
    seen = replace(observe(row), nodes=(), members=(other,))
    counted = decide(seen, (POOL,), POLICY, again.state).state
    assert counted.recent("gpu", NOW, POLICY) == 2
    tripped = decide(observe(row), (POOL,), POLICY, counted)
    assert [a.kind for a in tripped.actions] == [Kind.SUSPEND, Kind.HOLD]
    assert "gpu" in tripped.state.breakers
    # Stays tripped after the window: only a reset closes it.
    suspended = {POOL.group: frozenset({"ReplaceUnhealthy"})}
    later = replace(observe(row), now=NOW + 7 * 24 * 3600, suspended=suspended)
    assert [a.kind for a in decide(later, (POOL,), POLICY, tripped.state).actions] == [Kind.HOLD]
    reset = tripped.state.reset("gpu", "gpu-")
    assert [a.kind for a in decide(observe(row), (POOL,), POLICY, reset).actions] == [Kind.REPLACE]


def test_an_open_breaker_keeps_its_group_from_replacing() -> None:
    row = Row("x", record(), [])
    observed = replace(observe(row), suspended={POOL.group: frozenset()})
    actions = decide(observed, (POOL,), POLICY, OPEN).actions
    assert [(a.kind, a.group) for a in actions] == [(Kind.SUSPEND, POOL.group)]
    suspended = replace(observed, suspended={POOL.group: frozenset({"ReplaceUnhealthy"})})
    assert decide(suspended, (POOL,), POLICY, OPEN).actions == ()


def test_without_aws_only_slurm_decides() -> None:
    row = Row("x", record("ALLOCATED+DYNAMIC_NORM", CPUAlloc="8"), [], instance=False)
    blind = replace(observe(row), aws=False)
    assert decide(blind, (POOL,), POLICY, ControllerState()).actions == ()


def test_a_terminating_instance_that_never_registered_is_let_go() -> None:
    member = Member("i-0new", POOL.group, "gpu", "Terminating:Wait", "Unhealthy")
    observed = Observed(
        NOW, (), USERS, aws=True, members=(member,), logs_shipped=frozenset({"i-0new"})
    )
    actions = decide(observed, (POOL,), POLICY, ControllerState()).actions
    assert [(a.kind, a.instance) for a in actions] == [(Kind.COMPLETE, "i-0new")]


def test_the_overrides_of_the_definition_apply() -> None:
    policy = plan_health(HealthSpec(actions={"gpu-xid:79": "leave"})).repair
    row = Row("x", record("IDLE+DRAIN+DYNAMIC_NORM", XID_79), [])
    assert decide(observe(row), (POOL,), policy, ControllerState()).actions == ()


@pytest.mark.parametrize(
    ("reason", "user", "cause"),
    [
        (XID_79, "root", "gpu-xid:79"),
        ("slurmstack:gpu-xid:79 GPU has fallen off the bus", "root", "gpu-xid:79"),
        ("slurmstack:efa-port: rdmap0s0 port 1 is 1: DOWN", "root", "efa-port"),
        (f"{XID_109} : Not responding", "slurm", "gpu-xid:109"),  # Slurm >= 23.02 appended
        ("Not responding", "slurm", "slurm:Not responding"),
        ("Not responding", "root", None),
        ("replace me Action:Replace", "bob", "Action:Replace"),
        ("Action:Replaced?", "bob", None),
        ("waiting for a new PSU", "bob", None),
    ],
)
def test_the_cause_of_a_reason(reason: str, user: str, cause: str | None) -> None:
    assert cause_of_node(record(reason=reason, user=user), USERS) == cause


def test_the_pass_finds_a_nodes_pool_as_a_search_of_every_pool_would() -> None:
    """pool_finder (a lookup, for thousands of nodes a pass) answers what pool_of (a search of
    every pool) does, prefixes that end in a digit and names of no pool included."""
    pools = (
        PoolRef("gpu", "gpu-", "gpu"),
        PoolRef("gpu-2", "gpu-2-", "gpu-2"),
        PoolRef("odd", "x1", "odd"),  # a prefix ending in a digit (not the scheme's, allowed)
        PoolRef("x", "x", "x"),
        PoolRef("again", "gpu-", "again"),  # the same prefix: the first pool wins
    )
    names = ["gpu-1", "gpu-2-7", "gpu-2", "gpu-e3", "x12", "x1", "x", "cpu-4", "", "gpu-",
             "gpu-2-", "gpu-007", "x10"]  # fmt: skip
    for chosen in (pools, tuple(p for p in pools if p.name != "odd")):
        find = pool_finder(chosen)
        for name in names:
            assert find(name) is pool_of(name, chosen), name
    find = pool_finder(pools[:2])
    assert find("gpu-2-7") is pools[1] and find("gpu-3") is pools[0] and find("x12") is None
