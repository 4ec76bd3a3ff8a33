"""How long `slurmstack plan` takes, and how much of it is ours.

Prints, from one run on this machine (runs interleaved, medians of --repeat):
  - wall time of `slurmstack plan --json` for a cluster of 8 GPUs (1 x p5.48xlarge) and of
    10,240 GPUs (1,280 x p5.48xlarge), and their ratio (state grows with pools, not nodes,
    so the ratio should stay near 1);
  - wall time of a bare `import` of the Pulumi modules that plan loads, and plan's time as
    a ratio to it (our overhead over the unavoidable).

    uv run python benchmarks/bench_plan.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO / "infra")}


def definition(nodes: int) -> dict[str, object]:
    return {
        "name": "bench",
        "region": "us-east-1",
        "availability_zone": "us-east-1a",
        "network": {"vpc_cidr": "10.40.0.0/16"},
        "head_node": {"instance_type": "m7i.4xlarge"},
        "pools": [
            {
                "name": "train",
                "instance_type": "p5.48xlarge",
                "count": nodes,
                "capacity": {
                    "type": "capacity_reservation",
                    "reservation_id": "cr-0123456789abcdef0",
                },
                "local_scratch": "/scratch",
            }
        ],
        "storage": {"lustre": {"capacity_gib": 38400, "throughput_per_tib": 250}},
    }


def pulumi_modules_plan_loads(path: Path) -> list[str]:
    """The pulumi* modules present after a plan, imported in the same order."""
    probe = (
        "import sys, io, contextlib\n"
        "from slurmstack import cli\n"
        "sys.argv = ['slurmstack', 'plan', sys.argv[1], '--json']\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        cli.main()\n"
        "    except SystemExit:\n"
        "        pass\n"
        "mods = sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'pulumi_aws', 'pulumi_random'))\n"
        "print('\\n'.join(mods))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(path)],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [m for m in out.split() if m]


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=ENV, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small, large = Path(tmp) / "gpus-8.yaml", Path(tmp) / "gpus-10240.yaml"
        small.write_text(yaml.safe_dump(definition(1)))
        large.write_text(yaml.safe_dump(definition(1280)))
        modules = pulumi_modules_plan_loads(small)
        import_cmd = [sys.executable, "-c", "import " + ", ".join(modules)]
        plan = [sys.executable, "-m", "slurmstack.cli", "plan"]
        runs: dict[str, list[float]] = {"import": [], "small": [], "large": []}
        timed([*plan, str(small), "--json"])  # warm the file cache once
        for _ in range(args.repeat):
            runs["import"].append(timed(import_cmd))
            runs["small"].append(timed([*plan, str(small), "--json"]))
            runs["large"].append(timed([*plan, str(large), "--json"]))
        check = json.loads(
            subprocess.run(
                [*plan, str(large), "--json"], env=ENV, capture_output=True, text=True, check=True
            ).stdout
        )
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"pulumi modules plan loads: {len(modules)}")
    print(f"bare import of those modules     : {med['import']:.3f} s (median of {args.repeat})")
    print(f"plan, 8 GPUs (1 x p5.48xlarge)   : {med['small']:.3f} s")
    print(
        f"plan, 10,240 GPUs (1,280 x p5)   : {med['large']:.3f} s  ({check['summary']['gpus']} GPUs reported)"
    )
    print(f"ratio 10,240 / 8 GPUs            : {med['large'] / med['small']:.3f}")
    print(f"ratio plan(8 GPUs) / bare import : {med['small'] / med['import']:.3f}")
    print(f"our overhead over the import     : {med['small'] - med['import']:.3f} s")


if __name__ == "__main__":
    main()
