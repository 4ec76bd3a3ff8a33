"""The drain of pending outputs under simulated registration latency.

Runs the real program (infra/__main__.py) under the offline engine with every resource
registration delayed by a uniform random 0..L ms (seeded; the mock monitor answers in the
SDK's executor threads, as the engine's gRPC answers would), for L in the series, at 1 and
64 pools of 2 x p5.48xlarge, three ways:

  sdk       the installed SDK's drain alone (program's drain switched off)
  program   the program's own drain first (slurmstack.stack.drain, the default)
  patched   the SDK with wait_for_rpcs.patch applied (program's drain switched off)

For each it prints the futures handed to asyncio.wait (each one a callback added and
removed: the drain's work), the CPU seconds of the run and its wall time. The SDK's drain
rescans every pending output at every completion, so its work grows with completions x
pending; the other two wait for each output once.

    uv run python benchmarks/sdk_drain/bench_drain.py [--latencies 0,10,30,100] [--pools 1,64]

``wait_for_rpcs.patch`` is applied here to the installed pulumi/runtime/stack.py in memory,
so what is measured is the patch itself.

Measured on the team's 2-core machine (pulumi 3.272, collector paused as the program runs):
at 64 pools (739 resources) and 0..100 ms latency the SDK's drain handed 5.78 million
futures to asyncio.wait in 533 rounds and the run took 8.05 s of CPU; with the patch,
25,821 futures in one round and 2.81 s (the program's own drain: 25,814 and 2.74 s). From
1 to 64 pools (6.8x the resources) the SDK's drain work grew 22.4x; patched, 10.0x, as the
number of outputs does. Without latency the patch still saves 18% of the run's CPU
(3.04 -> 2.50 s at 64 pools).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import random
import re
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PATCH = HERE / "wait_for_rpcs.patch"
VARIANTS = ("sdk", "program", "patched")
POOL_SIZE = 2  # nodes per pool (p5.48xlarge)


def apply_unified_diff(original: str, diff: str) -> str:
    """Apply a one-file unified diff; every hunk's old text must match exactly."""
    text = original
    hunks = re.split(r"^@@ [^\n]*@@[^\n]*\n", diff.split("\n+++ ", 1)[1], flags=re.M)[1:]
    for hunk in hunks:
        old, new = [], []
        for line in hunk.splitlines():
            tag, body = line[:1], line[1:]
            if tag in (" ", ""):
                old.append(body)
                new.append(body)
            elif tag == "-":
                old.append(body)
            elif tag == "+":
                new.append(body)
        before, after = "\n".join(old) + "\n", "\n".join(new) + "\n"
        if text.count(before) != 1:
            raise SystemExit(f"{PATCH.name} does not apply to the installed SDK")
        text = text.replace(before, after)
    return text


def patched_wait_for_rpcs() -> Callable[..., Any]:
    """``wait_for_rpcs`` from the installed stack.py with the patch applied."""
    import pulumi.runtime.stack as stack

    source = apply_unified_diff(Path(stack.__file__).read_text(), PATCH.read_text())
    module = types.ModuleType("pulumi.runtime._stack_patched")
    module.__package__ = "pulumi.runtime"
    exec(compile(source, f"{stack.__file__} (patched)", "exec"), module.__dict__)
    return module.wait_for_rpcs  # type: ignore[no-any-return]


@dataclass
class WaitCount:
    calls: int = 0
    futures: int = 0


@contextlib.contextmanager
def counting_waits() -> Iterator[WaitCount]:
    """Count asyncio.wait calls and the futures given to them (the SDK's drain and the
    program's both look asyncio.wait up at call time)."""
    count, original = WaitCount(), asyncio.wait

    async def counted(fs: Any, *args: Any, **kwargs: Any) -> Any:
        fs = set(fs)
        count.calls += 1
        count.futures += len(fs)
        return await original(fs, *args, **kwargs)

    asyncio.wait = counted  # type: ignore[assignment]
    try:
        yield count
    finally:
        asyncio.wait = original


@contextlib.contextmanager
def registration_latency(max_ms: float, seed: int = 16) -> Iterator[None]:
    """Delay every registration the mock monitor answers by uniform(0, max_ms) ms."""
    from slurmstack.offline import engine

    original = engine.StandInMocks.new_resource
    rng, lock = random.Random(seed), threading.Lock()

    def delayed(self: Any, args: Any) -> Any:
        with lock:
            delay = rng.uniform(0.0, max_ms / 1000.0)
        time.sleep(delay)
        return original(self, args)

    engine.StandInMocks.new_resource = delayed  # type: ignore[method-assign]
    try:
        yield
    finally:
        engine.StandInMocks.new_resource = original  # type: ignore[method-assign]


@contextlib.contextmanager
def drain_variant(variant: str) -> Iterator[None]:
    """Switch the program's drain off (sdk, patched) and the SDK's drain to the patched one."""
    import pulumi.runtime.stack as stack

    try:
        import slurmstack.stack.drain as drain
    except ImportError:  # a checkout from before the program drained its own outputs
        drain = None
    saved_drain = drain.drain_pending_outputs if drain is not None else None
    saved_wait = stack.wait_for_rpcs

    async def no_drain(*_: Any) -> None:
        return None

    if drain is not None and variant in ("sdk", "patched"):
        drain.drain_pending_outputs = no_drain  # type: ignore[assignment]
    if variant == "patched":
        stack.wait_for_rpcs = patched_wait_for_rpcs()
    try:
        yield
    finally:
        stack.wait_for_rpcs = saved_wait
        if drain is not None:
            drain.drain_pending_outputs = saved_drain  # type: ignore[assignment]


def pools_definition(pools: int) -> dict[str, Any]:
    return {
        "name": "bench",
        "region": "us-east-1",
        "availability_zone": "us-east-1a",
        "head_node": {"instance_type": "m7i.4xlarge"},
        "pools": [
            {"name": f"p{i}", "instance_type": "p5.48xlarge", "count": POOL_SIZE}
            for i in range(pools)
        ],
        "storage": {
            "lustre": {
                "capacity_gib": 38400,
                "deployment": "PERSISTENT_2",
                "throughput_per_tib": 250,
                "s3_import_export": "datasets/",
            },
            "home": {"type": "efs"},
        },
    }


@dataclass(frozen=True)
class DrainRun:
    latency_ms: int
    pools: int
    variant: str
    resources: int
    wait_calls: int
    futures_waited: int
    cpu_s: float
    wall_s: float


def measure(latency_ms: int, pools: int, variant: str) -> DrainRun:
    from slurmstack.offline import config_for, run_program

    config = config_for(pools_definition(pools))
    with registration_latency(latency_ms), drain_variant(variant), counting_waits() as waits:
        cpu, wall = time.process_time(), time.perf_counter()
        result = run_program(config)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if result.error is not None:
        raise SystemExit(f"program failed ({variant}, {latency_ms} ms): {result.error}")
    return DrainRun(
        latency_ms,
        pools,
        variant,
        len(result.custom),
        waits.calls,
        waits.futures,
        cpu,
        wall,
    )


def variants_of_this_checkout() -> tuple[str, ...]:
    """All three, less ``program`` where the checkout's program has no drain of its own."""
    has_drain = importlib.util.find_spec("slurmstack.stack.drain") is not None
    return VARIANTS if has_drain else tuple(v for v in VARIANTS if v != "program")


def latency_series(latencies: list[int], pool_counts: list[int]) -> list[DrainRun]:
    """Print the series; return every run."""
    variants = variants_of_this_checkout()
    runs: list[DrainRun] = []
    print(
        f"{'latency':>8} {'pools':>5} {'resources':>9} {'drain':>8} {'waits':>7}"
        f" {'futures':>10} {'cpu s':>7} {'wall s':>7}"
    )
    for latency in latencies:
        for pools in pool_counts:
            for variant in variants:
                run = measure(latency, pools, variant)
                runs.append(run)
                print(
                    f"{latency:>6}ms {pools:>5} {run.resources:>9} {variant:>8}"
                    f" {run.wait_calls:>7} {run.futures_waited:>10,} {run.cpu_s:>7.2f}"
                    f" {run.wall_s:>7.2f}",
                    flush=True,
                )
    if len(pool_counts) >= 2:
        low, high = min(pool_counts), max(pool_counts)
        print(f"\ngrowth {low} -> {high} pools (futures waited, cpu):")
        for latency in latencies:
            parts = []
            for variant in variants:
                a = next(
                    r for r in runs if (r.latency_ms, r.pools, r.variant) == (latency, low, variant)
                )
                b = next(
                    r
                    for r in runs
                    if (r.latency_ms, r.pools, r.variant) == (latency, high, variant)
                )
                parts.append(
                    f"{variant} {b.futures_waited / a.futures_waited:.1f}x / {b.cpu_s / a.cpu_s:.1f}x"
                )
            resources = next(
                r for r in runs if (r.latency_ms, r.pools) == (latency, high)
            ).resources
            base = next(r for r in runs if (r.latency_ms, r.pools) == (latency, low)).resources
            print(f"{latency:>6}ms  resources {resources / base:.1f}x   " + "   ".join(parts))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latencies", default="0,10,30,100", help="max ms, comma-separated")
    parser.add_argument("--pools", default="1,64", help="pool counts, comma-separated")
    parser.add_argument("--repo", type=Path, default=HERE.parents[1], help="checkout to measure")
    args = parser.parse_args()
    sys.path.insert(0, str(args.repo / "infra"))
    from slurmstack.offline import config_for, run_program

    run_program(config_for(pools_definition(1)))  # imports are not part of any case
    latency_series(
        [int(x) for x in args.latencies.split(",")], [int(x) for x in args.pools.split(",")]
    )


if __name__ == "__main__":
    main()
