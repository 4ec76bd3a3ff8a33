"""The performance goals, measured in one run (issue 16's Proof).

Prints, from one run on this machine:
  1. whole process: `slurmstack plan --json` of the p5 example against a bare `import` of
     the Pulumi modules it loads (the import floor); goal plan <= 1.5 x the floor;
  2. whole process and engine: 1 against 64 pools (2 x p5.48xlarge each); goal 64 pools
     <= 2.5 x one pool, whole process;
  3. whole process and engine: 8 against 10,240 GPUs (one p5.48xlarge pool of 1 and of
     1,280 nodes); goal 10,240 GPUs <= 1.1 x 8 GPUs;
  4. the garbage-collector settings the program could run with (engine, p5 and 64 pools);
  5. what one config-store object per role (instead of per file) would give at 64 pools,
     with the store patched in this script only (the product keeps one object per file);
  6. the simulated-latency series of the drain of pending outputs (sdk_drain/bench_drain.py).

Whole-process figures are medians of --repeat runs, the cases interleaved so that load on
the machine falls on all of them alike; engine figures are the best of three in-process
runs after a warm-up. Ratios are what to compare; absolute times move with the load.

    uv run python benchmarks/bench_goals.py [--repeat 5] [--repo PATH] [--skip-latency]

--repo measures another checkout with this script (for example an export of an older
commit, run with that checkout's own virtual environment's python).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "sdk_drain"))
sys.path.insert(0, str(HERE))

from bench_drain import latency_series, pools_definition  # noqa: E402

GOAL_IMPORT_RATIO, GOAL_POOLS_RATIO, GOAL_GPUS_RATIO = 1.5, 2.5, 1.1


def gpus_definition(nodes: int) -> dict[str, Any]:
    """One p5.48xlarge pool (8 H100 a node) of ``nodes`` nodes."""
    definition = pools_definition(1)
    definition["pools"][0]["count"] = nodes
    definition["pools"][0]["name"] = "train"
    return definition


class Checkout:
    """The repository measured: its program, examples and a python to run them."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.env = {**os.environ, "PYTHONPATH": str(repo / "infra")}

    def run(self, argv: list[str]) -> tuple[float, float]:
        """Wall and CPU (user + system) seconds of one run of ``argv``."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, env=self.env, cwd=self.repo, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    def plan_argv(self, path: Path) -> list[str]:
        return [sys.executable, "-m", "slurmstack.cli", "plan", str(path), "--json"]

    def pulumi_modules_of_plan(self, path: Path) -> list[str]:
        """The pulumi* modules present after a plan, in import order."""
        probe = (
            "import sys, io, contextlib\n"
            "from slurmstack import cli\n"
            "sys.argv = ['slurmstack', 'plan', sys.argv[1], '--json']\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            "        cli.main()\n"
            "    except SystemExit:\n"
            "        pass\n"
            "print(' '.join(m for m in sys.modules if m.split('.')[0] in "
            "('pulumi', 'pulumi_aws', 'pulumi_random')))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe, str(path)],
            env=self.env,
            cwd=self.repo,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.split()


def whole_process(
    checkout: Checkout, files: dict[str, Path], repeat: int
) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds of each command, the commands interleaved."""
    modules = checkout.pulumi_modules_of_plan(files["p5"])
    commands: dict[str, list[str]] = {
        "import floor": [sys.executable, "-c", "import " + ", ".join(modules)],
        # The same, exiting as a plan that paused the collector does (objects frozen, so
        # the interpreter's final collection skips them): the like-for-like floor.
        "import floor, frozen at exit": [
            sys.executable,
            "-c",
            "import gc; import " + ", ".join(modules) + "; gc.freeze()",
        ],
        "plan p5": checkout.plan_argv(files["p5"]),
        "plan 1 pool": checkout.plan_argv(files["pools-1"]),
        "plan 64 pools": checkout.plan_argv(files["pools-64"]),
        "plan 8 GPUs": checkout.plan_argv(files["gpus-8"]),
        "plan 10,240 GPUs": checkout.plan_argv(files["gpus-10240"]),
    }
    uv = shutil.which("uv")
    if uv is not None:
        # The README's first command, from its second run on (the environment exists).
        commands["uv run slurmstack plan p5"] = [
            uv,
            "run",
            "--frozen",
            "slurmstack",
            "plan",
            "examples/p5-training.yaml",
        ]
    for argv in commands.values():  # warm the file cache; the first uv run may sync
        checkout.run(argv)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, argv in commands.items():
            times[name].append(checkout.run(argv))
    print(f"pulumi modules plan loads: {len(modules)}")
    return {
        name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        for name, runs in times.items()
    }


def best_engine_run(definition: dict[str, Any], repeats: int = 3) -> tuple[float, float, int]:
    """Best wall and CPU seconds of an in-process run, and the resources it registered."""
    from slurmstack.offline import config_for, run_program

    config = config_for(definition)
    best_wall = best_cpu = float("inf")
    resources = 0
    for _ in range(repeats):
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        result = run_program(config)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if result.error is not None:
            raise SystemExit(f"program failed: {result.error}")
        best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
        resources = len(result.custom)
    return best_wall, best_cpu, resources


@contextlib.contextmanager
def collector_setting(name: str) -> Iterator[None]:
    """Run with the collector on (default or raised thresholds) or paused, whatever the
    program itself asks for (its gc.disable is neutralised for the 'on' settings)."""
    saved_threshold, saved_disable = gc.get_threshold(), gc.disable
    thresholds = {
        "default (700, 10, 10)": (700, 10, 10),
        "raised (50000, 50, 100)": (50_000, 50, 100),
    }
    if name in thresholds:
        gc.disable = lambda: None  # type: ignore[assignment]
        gc.enable()
        gc.set_threshold(*thresholds[name])
    else:
        gc.disable()
    try:
        yield
    finally:
        gc.disable = saved_disable  # type: ignore[assignment]
        gc.set_threshold(*saved_threshold)
        gc.enable()


GC_SETTINGS = ("default (700, 10, 10)", "raised (50000, 50, 100)", "paused")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--repo", type=Path, default=HERE.parent, help="checkout to measure")
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    repo = args.repo.resolve()
    sys.path.insert(0, str(repo / "infra"))
    checkout = Checkout(repo)
    print(f"checkout: {repo}   python: {sys.executable}   pid: {os.getpid()}")

    definitions = {
        "pools-1": pools_definition(1),
        "pools-64": pools_definition(64),
        "gpus-8": gpus_definition(1),
        "gpus-10240": gpus_definition(1280),
    }
    with tempfile.TemporaryDirectory() as tmp:
        files = {"p5": repo / "examples" / "p5-training.yaml"}
        for name, definition in definitions.items():
            files[name] = Path(tmp) / f"{name}.yaml"
            files[name].write_text(yaml.safe_dump(definition))
        print(f"\n== whole process (median of {args.repeat}, interleaved)")
        wp = whole_process(checkout, files, args.repeat)
    print(f"{'':>36}  {'wall s':>7} {'cpu s':>7}")
    for name, (wall, cpu) in wp.items():
        print(f"{name:>36}: {wall:7.3f} {cpu:7.3f}")

    from slurmstack.offline import config_for, run_program

    p5 = yaml.safe_load((repo / "examples" / "p5-training.yaml").read_text())
    run_program(config_for(p5))  # warm-up: imports are not part of any engine case
    # The collector as `slurmstack plan` of this checkout runs it (paused from the start of
    # the command where slurmstack.collector exists, else on).
    as_plan = "paused" if importlib.util.find_spec("slurmstack.collector") else GC_SETTINGS[0]
    print(f"\n== engine (in process, best of 3, collector {as_plan}): wall s, cpu s, resources")
    engine: dict[str, tuple[float, float, int]] = {}
    with collector_setting(as_plan):
        for name, definition in [("p5", p5), *definitions.items()]:
            engine[name] = best_engine_run(definition)
            wall, cpu, count = engine[name]
            print(f"{name:>36}: {wall:7.3f} {cpu:7.3f} {count:6}")

    print("\n== garbage collector during the program (engine, best of 3): wall s, cpu s")
    for setting in GC_SETTINGS:
        with collector_setting(setting):
            cells = [best_engine_run(d) for d in (p5, definitions["pools-64"])]
        print(
            f"{setting:>36}: p5 {cells[0][0]:6.3f} {cells[0][1]:6.3f}"
            f"   64 pools {cells[1][0]:6.3f} {cells[1][1]:6.3f}"
        )

    print("\n== goals (wall; cpu in brackets)")
    floor = wp["import floor"]

    def whole(a: str, b: str) -> tuple[float, float]:
        return wp[a][0] / wp[b][0], wp[a][1] / wp[b][1]

    def in_engine(a: str, b: str) -> tuple[float, float]:
        return engine[a][0] / engine[b][0], engine[a][1] / engine[b][1]

    rows: list[tuple[str, tuple[float, float], float | None]] = [
        ("plan p5 / import floor", whole("plan p5", "import floor"), GOAL_IMPORT_RATIO),
        (
            "  / import floor, frozen at exit",
            whole("plan p5", "import floor, frozen at exit"),
            GOAL_IMPORT_RATIO,
        ),
        ("64 / 1 pools, whole process", whole("plan 64 pools", "plan 1 pool"), GOAL_POOLS_RATIO),
        ("64 / 1 pools, engine", in_engine("pools-64", "pools-1"), None),
        (
            "10,240 / 8 GPUs, whole process",
            whole("plan 10,240 GPUs", "plan 8 GPUs"),
            GOAL_GPUS_RATIO,
        ),
        ("10,240 / 8 GPUs, engine", in_engine("gpus-10240", "gpus-8"), None),
    ]
    for label, (by_wall, by_cpu), goal in rows:
        judged = (
            "" if goal is None else f"goal <= {goal}x " + ("met" if by_wall <= goal else "NOT met")
        )
        print(f"{label:>36}: {by_wall:5.2f}x ({by_cpu:5.2f}x)  {judged}")
    resources = engine["pools-64"][2] / engine["pools-1"][2]
    print(f"{'64 / 1 pools, resources':>36}: {resources:5.2f}x")
    print(f"{'plan p5 - import floor':>36}: {wp['plan p5'][0] - floor[0]:.3f} s")

    if not args.skip_latency:
        print("\n== drain of pending outputs under simulated registration latency")
        latency_series([0, 10, 30, 100], [1, 64])


if __name__ == "__main__":
    main()
