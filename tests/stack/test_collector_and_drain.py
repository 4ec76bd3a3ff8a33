"""How the program runs under the SDK: the garbage collector paused for the program, and
pending outputs drained once each (the program's own drain, and the SDK patch proposed
in benchmarks/sdk_drain/)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib.util
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pulumi.runtime.stack as sdk_stack
import pytest

import slurmstack.stack.drain as drain
from slurmstack.offline import OfflineRun, engine, run_definition
from slurmstack.stack.drain import drain_pending_outputs
from support.stack import small_cluster

pytestmark = pytest.mark.stack

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def waits_counted() -> Iterator[Counter[int]]:
    """How many times each future is handed to asyncio.wait (the SDK's drain and the
    program's look asyncio.wait up when they call it)."""
    seen: Counter[int] = Counter()
    original = asyncio.wait

    async def counted(fs: Any, *args: Any, **kwargs: Any) -> Any:
        fs = set(fs)
        seen.update(id(f) for f in fs)
        return await original(fs, *args, **kwargs)

    asyncio.wait = counted  # type: ignore[assignment]
    try:
        yield seen
    finally:
        asyncio.wait = original


@contextlib.contextmanager
def collector_seen_by_registrations() -> Iterator[list[bool]]:
    """Whether the collector was on at each resource registration."""
    states: list[bool] = []
    original = engine.StandInMocks.new_resource

    def recording(self: Any, args: Any) -> Any:
        states.append(gc.isenabled())
        return original(self, args)

    engine.StandInMocks.new_resource = recording  # type: ignore[method-assign]
    try:
        yield states
    finally:
        engine.StandInMocks.new_resource = original  # type: ignore[method-assign]


def test_engine_pauses_the_collector_for_the_run_and_restores_it() -> None:
    assert gc.isenabled()
    with collector_seen_by_registrations() as states:
        result = run_definition(small_cluster(count=1))
    assert result.ok and states and not any(states)
    assert gc.isenabled()
    gc.disable()
    try:
        run_definition(small_cluster(count=2))
        assert not gc.isenabled()  # a caller's paused collector stays paused
    finally:
        gc.enable()


def test_program_pauses_the_collector_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    # Under `pulumi preview`/`up` only the program's own setting applies.
    monkeypatch.setattr(engine, "collector_paused", contextlib.nullcontext)
    try:
        with collector_seen_by_registrations() as states:
            result = run_definition(small_cluster(count=1))
        assert result.ok and states and not any(states)
    finally:
        gc.enable()


def test_a_paused_process_freezes_its_objects_at_exit() -> None:
    # The interpreter's last collection at exit walks every object left unless frozen.
    probe = (
        "import atexit, gc\n"
        "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0))\n"
        "from slurmstack.collector import pause_for_program\n"
        "before = atexit._ncallbacks()\n"
        "{pause}"
        "print('handlers added:', atexit._ncallbacks() - before)\n"
        "print('collector on:', gc.isenabled())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "infra")}
    outputs = [
        subprocess.run(
            [sys.executable, "-c", probe.format(pause=pause)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.splitlines()
        for pause in ("pause_for_program()\npause_for_program()\n", "")
    ]
    assert outputs[0] == ["handlers added: 1", "collector on: False", "frozen at exit: True"]
    assert outputs[1] == ["handlers added: 0", "collector on: True", "frozen at exit: False"]


def _run_counting_waits(count: int) -> tuple[OfflineRun, Counter[int]]:
    with waits_counted() as seen:
        result = run_definition(small_cluster(count=count))
    assert result.ok, result.error
    return result, seen


def test_program_drain_waits_for_each_output_about_once(monkeypatch: pytest.MonkeyPatch) -> None:
    drained, with_drain = _run_counting_waits(3)
    # Most futures are waited on exactly once; the few created after the drain (the
    # stack's own outputs) are left to the SDK.
    assert sum(with_drain.values()) <= 1.2 * len(with_drain)
    monkeypatch.setattr(drain, "drain_pending_outputs", _no_drain)
    sdk_only, without = _run_counting_waits(3)
    assert sum(without.values()) > 5 * len(without)
    assert [r.to_dict() for r in drained.resources] == [r.to_dict() for r in sdk_only.resources]
    assert drained.outputs == sdk_only.outputs


async def _no_drain(*_: Any) -> None:
    return None


def test_drain_runs_generation_by_generation_and_leaves_failures_to_the_sdk() -> None:
    async def scenario() -> tuple[int, list[str]]:
        loop = asyncio.get_running_loop()
        tracked: set[asyncio.Future[object]] = set()
        log: list[str] = []

        def later(delay: float, then: Any = None, fail: bool = False) -> None:
            future: asyncio.Future[object] = loop.create_future()
            tracked.add(future)

            def finish() -> None:
                if fail:
                    future.set_exception(RuntimeError("registration failed"))
                    log.append("failed")
                    return
                future.set_result(None)
                log.append(f"done {delay}")
                if then is not None:
                    then()

            loop.call_later(delay, finish)

        # Two generations: the second future is created when the first completes.
        later(0.01, then=lambda: later(0.02))
        later(0.03)
        with waits_counted() as seen:
            await drain_pending_outputs(lambda: {f for f in tracked if not f.done()})
        generations = max(seen.values())
        # A failure ends the drain without raising; later outputs are not waited for.
        later(0.01, fail=True)
        later(5.0)
        await drain_pending_outputs(lambda: {f for f in tracked if not f.done()})
        for future in tracked:
            if not future.done():
                future.cancel()
        return generations, log

    generations, log = asyncio.run(scenario())
    assert generations == 1  # each future waited on once
    assert log == ["done 0.01", "done 0.03", "done 0.02", "failed"]


def _bench_drain(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    path = REPO / "benchmarks" / "sdk_drain" / "bench_drain.py"
    spec = importlib.util.spec_from_file_location("bench_drain", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_drain", module)  # its dataclasses look it up
    spec.loader.exec_module(module)
    return module


def test_the_proposed_sdk_patch_applies_and_drains_each_output_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bench = _bench_drain(monkeypatch)
    patched = bench.patched_wait_for_rpcs()  # raises if the patch does not apply
    monkeypatch.setattr(sdk_stack, "wait_for_rpcs", patched)
    monkeypatch.setattr(drain, "drain_pending_outputs", _no_drain)
    result, seen = _run_counting_waits(3)
    assert sum(seen.values()) <= 1.2 * len(seen)
    assert result.outputs["pools"]
