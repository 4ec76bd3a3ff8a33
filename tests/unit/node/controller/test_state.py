"""state: the controller's memory survives passes (and head replacements, on the state volume),
ages out, and one pass holds it at a time."""

from __future__ import annotations

from pathlib import Path

from slurmstack.contract import CONTROLLER_STATE_PATH, RepairPolicy
from slurmstack.node.controller import state as memory
from slurmstack.node.controller.state import ControllerState, Trip, Waiting
from support.node import make_node

POLICY = RepairPolicy(
    rules=(),
    breaker_replacements=2,
    breaker_window_minutes=60,
    reboot_window_minutes=60,
    capacity_block_drain_minutes=60,
    scale_in_wait_minutes=120,
    logs_wait_minutes=5,
)
NOW = 1_750_000_000.0


def test_it_round_trips_through_its_file(tmp_path: Path) -> None:
    node = make_node(tmp_path, None, "head")
    state = ControllerState(
        replacements={"gpu": ((NOW, "i-1"),)},
        breakers={"gpu": Trip(NOW, "2 replacements in 60 min")},
        reboots={"gpu-7": (NOW, "gpu-xid:63")},
        counted={"i-1": NOW},
        terminating={"i-2": Waiting(NOW, NOW + 5)},
    )
    memory.save(node, state)
    assert memory.load(node) == state
    path = tmp_path / CONTROLLER_STATE_PATH.lstrip("/")
    assert path.stat().st_mode & 0o777 == 0o600
    assert memory.load(make_node(tmp_path / "new", None, "head")) == ControllerState()


def test_old_entries_age_out_and_a_trip_stays() -> None:
    state = ControllerState(
        replacements={"gpu": ((NOW - 7200, "i-1"), (NOW - 60, "i-2")), "cpu": ((NOW - 7200, "x"),)},
        breakers={"gpu": Trip(NOW - 30 * 24 * 3600, "old")},
        reboots={"gpu-1": (NOW - 7200, "efa-port"), "gpu-2": (NOW - 60, "efa-port")},
        terminating={"i-9": Waiting(NOW - 60), "i-8": Waiting(NOW - 60)},
    )
    pruned = state.pruned(NOW, POLICY, terminating={"i-9"})
    assert pruned.replacements == {"gpu": ((NOW - 60, "i-2"),)}
    assert pruned.breakers == state.breakers
    assert set(pruned.reboots) == {"gpu-2"}
    assert set(pruned.terminating) == {"i-9"}
    assert pruned.recent("gpu", NOW, POLICY) == 1
    assert state.count("gpu", "i-3", NOW).count("gpu", "i-3", NOW).recent("gpu", NOW, POLICY) == 2
    reset = state.reset("gpu", "gpu-")
    assert "gpu" not in reset.breakers and "gpu" not in reset.replacements
    assert reset.reboots == {} and reset.replacements["cpu"] == state.replacements["cpu"]


def test_one_pass_at_a_time(tmp_path: Path) -> None:
    node = make_node(tmp_path, None, "head")
    with memory.locked(node) as first:
        assert first
        with memory.locked(node) as second:
            assert not second
    with memory.locked(node) as again:
        assert again
