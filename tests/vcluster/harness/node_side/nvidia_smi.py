#!/usr/bin/python3
"""nvidia-smi on a virtual-cluster node: a stand-in (stand-in "gpu-tools": no GPUs here).

It lists the node's GPUs from its device files (/dev/nvidia<n>, made by node_init.py as many
as the pool's instance type has) and answers the queries the health check makes, faults
injected by a scenario through /var/lib/vcluster/gpus.json:
  {"lost": [1]}      GPU 1 has fallen off the bus: nvidia-smi cannot read it (exit 15)
  {"ecc": {"2": 3}}  GPU 2 has 3 uncorrectable ECC errors
  {"hang": true}     nvidia-smi hangs (the check's timeout must end it)
Standard library only: it runs on the node's system python."""

import json
import os
import re
import sys
import time

FAULTS = "/var/lib/vcluster/gpus.json"


def faults() -> dict:
    try:
        with open(FAULTS) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return {}


def gpus() -> list[int]:
    return sorted(int(m[1]) for n in os.listdir("/dev") if (m := re.fullmatch(r"nvidia(\d+)", n)))


def bus(index: int) -> str:
    return f"00000000:{16 + index:02X}:00.0"


def main(argv: list[str]) -> int:
    found = faults()
    if found.get("hang"):
        time.sleep(3600)
    lost = set(found.get("lost", []))
    ecc = {int(k): v for k, v in found.get("ecc", {}).items()}
    query = next((a for a in argv if a.startswith("--query-")), "")
    if lost and query.startswith("--query-gpu="):
        first = min(lost)
        print(f"Unable to determine the device handle for GPU{bus(first)}: Unknown Error")
        return 15
    if query.startswith("--query-gpu="):
        for i in gpus():
            print(f"{i}, {bus(i)}, {ecc.get(i, 0)}, [N/A]")
        return 0
    if query.startswith("--query-remapped-rows="):
        for i in gpus():
            print(f"{bus(i)}, 0")
        return 0
    print(f"nvidia-smi (virtual cluster): {len(gpus())} GPUs, {len(lost)} lost")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
