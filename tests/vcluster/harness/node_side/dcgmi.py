#!/usr/bin/python3
"""dcgmi on a virtual-cluster node: a stand-in (stand-in "gpu-tools"). `dcgmi diag -r N` passes,
unless /var/lib/vcluster/gpus.json says {"diag": "fail"}: then a failed test, as DCGM prints it.
Every run is recorded in /var/log/vcluster/dcgmi.log. Standard library only."""

import json
import os
import sys
import time

FAULTS = "/var/lib/vcluster/gpus.json"
RUNS = "/var/log/vcluster/dcgmi.log"
ROW = "| {:<25} | {:<46} |"


def main(argv: list[str]) -> int:
    os.makedirs(os.path.dirname(RUNS), exist_ok=True)
    with open(RUNS, "a") as handle:
        handle.write(f"{time.time():.0f} {' '.join(argv)}\n")
    try:
        with open(FAULTS) as handle:
            fail = json.load(handle).get("diag") == "fail"
    except FileNotFoundError:
        fail = False
    print("+---------------------------+------------------------------------------------+")
    print(ROW.format("Memory", "Pass - All"))
    print(ROW.format("Diagnostic", "Fail - GPU: 0" if fail else "Pass - All"))
    print("+---------------------------+------------------------------------------------+")
    return 226 if fail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
