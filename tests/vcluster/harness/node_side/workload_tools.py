#!/usr/bin/python3
"""Stand-ins for the GPU node's tools the node check and the acceptance run call (stand-in
"workload-tools", ../standins.py; nvidia-smi is stand-in "gpu-tools"), one program by the name
it is called as:

  fi_info -p efa ...                                 one EFA domain per /sys/class/infiniband
                                                     entry, or fi_getinfo's -61 when none
  all_reduce_perf ARGS                               rank 0 prints a sweep in nccl-tests' own
                                                     format; the run's nodes are Slurm's; a
                                                     node named in VCLUSTER_SLOW_NODES (comma
                                                     separated, from the caller's environment,
                                                     which srun passes on) slows the whole run

Standard library only: it runs on the node's system python.
"""

import os
import subprocess
import sys

HEALTHY_BUSBW = 11.2  # GB/s at 2 GiB: about what 100 Gbit/s of EFA gives four L40S per node
SLOW_BUSBW = 2.9


def fi_info(args: list[str]) -> int:
    directory = "/sys/class/infiniband"
    devices = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    if not devices:
        print("fi_getinfo: -61 (No data available)", file=sys.stderr)
        return 61
    for device in devices:
        print(f"provider: efa\n    fabric: efa\n    domain: {device}-rdm\n    version: 122.0")
        print("    type: FI_EP_RDM\n    protocol: FI_PROTO_EFA")
    return 0


def all_reduce_perf(args: list[str]) -> int:
    if os.environ.get("SLURM_PROCID", "0") != "0":
        return 0
    listed = subprocess.run(
        ["scontrol", "show", "hostnames", os.environ["SLURM_JOB_NODELIST"]],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    slow = set(filter(None, os.environ.get("VCLUSTER_SLOW_NODES", "").split(",")))
    peak = SLOW_BUSBW if slow & set(listed) else HEALTHY_BUSBW
    ranks = int(os.environ.get("SLURM_NTASKS", "1"))
    per_node = max(ranks // max(len(listed), 1), 1)
    print("# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703")
    print("# Collective test starting: all_reduce_perf")
    print(f"# nThread 1 nGpus 1 minBytes 8 maxBytes {2**31} step: 2(factor) warmup iters: 5 "
          "iters: 20 agg iters: 1 validation: 1 graph: 0")  # fmt: skip
    print("#\n# Using devices")
    for rank in range(ranks):
        host = listed[min(rank // per_node, len(listed) - 1)]
        print(f"#  Rank {rank:2d} Group  0 Pid {4000 + rank:6d} on {host:>10} device "
              f"{rank % per_node:2d} [0000:53:00] NVIDIA L40S")  # fmt: skip
    print("#")
    factor = 2 * (ranks - 1) / ranks if ranks > 1 else 1.0
    size, total, count = 8, 0.0, 0
    while size <= 2**31:
        time_us = 60 + size / (peak / factor * 1e3)
        alg = size / time_us / 1e3
        bus = alg * factor
        total, count = total + bus, count + 1
        row = f"  {time_us:7.2f}  {alg:6.2f}  {bus:6.2f}       0"
        print(f"{size:12d}  {size // 4:12d}     float     sum      -1{row}{row}")
        size *= 2
    print("# Out of bounds values : 0 OK")
    print(f"# Avg bus bandwidth    : {total / count:g} ")
    print("#\n# Collective test concluded: all_reduce_perf")
    return 0


TOOLS = {"fi_info": fi_info, "all_reduce_perf": all_reduce_perf}

if __name__ == "__main__":
    sys.exit(TOOLS[os.path.basename(sys.argv[0])](sys.argv[1:]))
