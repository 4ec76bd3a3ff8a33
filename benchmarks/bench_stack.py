"""Time to build the Pulumi resource graph, by number of pools and by number of GPUs.

Runs the program under the offline engine (Pulumi mocks, preview=False, every apply run)
and prints, for each size, the resources registered, the best of REPEATS wall times, and the
ratio to the smallest case of its series. Everything is measured in one process, one after
the other, so the ratios hold on a noisy machine even when the absolute times do not.

    uv run python benchmarks/bench_stack.py

Both series run the real program (infra/__main__.py). GPU series: one p5.48xlarge pool of
1 ... 1,280 nodes (8 ... 10,240 H100). Pool series: 1 ... 64 pools of 2 x p5.48xlarge.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "infra"))

from slurmstack.offline import OfflineRun, config_for, run_program  # noqa: E402

REPEATS = 3
GPU_NODES = (1, 16, 128, 1280)  # x 8 H100 = 8 ... 10,240 GPUs
POOL_COUNTS = (1, 4, 16, 64)


def definition(pools: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": "bench",
        "region": "us-east-1",
        "availability_zone": "us-east-1a",
        "head_node": {"instance_type": "m7i.4xlarge"},
        "pools": pools,
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


def p5_pool(name: str, count: int) -> dict[str, Any]:
    return {"name": name, "instance_type": "p5.48xlarge", "count": count}


def timed(config: dict[str, str]) -> tuple[float, OfflineRun]:
    best = float("inf")
    result: OfflineRun | None = None
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = run_program(config)
        best = min(best, time.perf_counter() - start)
        if result.error is not None:
            raise SystemExit(f"program failed: {result.error}")
    assert result is not None
    return best, result


def series(title: str, cases: list[tuple[str, dict[str, Any]]]) -> None:
    print(f"\n{title}")
    print(f"{'case':>14} {'resources':>10} {'seconds':>9} {'ratio':>7}")
    base: float | None = None
    for label, spec in cases:
        seconds, result = timed(config_for(spec))
        base = base or seconds
        print(f"{label:>14} {len(result.resources):>10} {seconds:>9.3f} {seconds / base:>7.2f}")


def main() -> None:
    # Warm-up: imports of pulumi, pulumi_aws and the templates are not part of any case.
    run_program(config_for(definition([p5_pool("warm", 1)])))
    series(
        "GPUs (one p5.48xlarge pool)",
        [(f"{n * 8:,} GPUs", definition([p5_pool("train", n)])) for n in GPU_NODES],
    )
    series(
        "pools (2 x p5.48xlarge each)",
        [(f"{k} pools", definition([p5_pool(f"p{i}", 2) for i in range(k)])) for k in POOL_COUNTS],
    )


if __name__ == "__main__":
    main()
