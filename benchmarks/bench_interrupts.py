"""Ctrl-C at random points of `slurmstack plan`: how each run ended, and how fast.

Starts the console script `--runs` times, sends SIGINT after a random delay within the
length of one uninterrupted plan, and counts the outcomes: killed by SIGINT (what the shell
shows as 130), finished before the signal, or anything else (an exit code, output on
stderr, a hang: still running 15 s after the signal). Prints the counts and the slowest
time from signal to exit.

    uv run python benchmarks/bench_interrupts.py [--runs 24] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).with_name("slurmstack")
EXAMPLE = "examples/p5-training.yaml"
HANG_SECONDS = 15.0


def _one(delay: float) -> tuple[str, float, str]:
    process = subprocess.Popen(
        [str(SCRIPT), "plan", EXAMPLE],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        _out, err = process.communicate(timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return "hang", HANG_SECONDS, ""
    took = time.monotonic() - sent
    if process.returncode == -signal.SIGINT and not err:
        return "killed by SIGINT", took, ""
    if process.returncode == 0:
        return "finished first", took, ""
    return f"exit {process.returncode}", took, err.strip().splitlines()[-1:][0] if err else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=24)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.monotonic()
    subprocess.run([str(SCRIPT), "plan", EXAMPLE], cwd=REPO, capture_output=True, check=True)
    length = time.monotonic() - started
    outcomes: Counter[str] = Counter()
    slowest = 0.0
    for _ in range(args.runs):
        outcome, took, detail = _one(rng.uniform(0.2, length))
        outcomes[outcome] += 1
        slowest = max(slowest, took)
        if detail:
            print(f"  {outcome}: {detail}")
    print(f"one plan: {length:.1f} s; {args.runs} interrupted runs: {dict(outcomes)}")
    print(f"slowest from signal to exit: {slowest:.2f} s")


if __name__ == "__main__":
    main()
