#!/usr/bin/python3
"""dcgm-exporter on a virtual-cluster node: a stand-in (stand-in "dcgm-exporter": no GPUs, no
DCGM here).

It serves what the real exporter serves on --address (default :9400) at /metrics: DCGM's fields
per GPU, one series per GPU found in the node's device files (/dev/nvidia<n>), with the
exporter's labels (gpu, UUID, device, modelName, Hostname) and, read from
--hpc-job-mapping-dir at every scrape, hpc_job="<id>" for each job that holds the GPU (a file
per GPU index, a job id per line: one series per job). What the GPUs do comes from the node's
/var/lib/vcluster/gpus.json, which scenarios write (nvidia_smi.py reads its faults from there):
  {"lost": [1]}                 GPU 1 has fallen off the bus: none of its series is served
  {"util": {"0": 85}}           GPU 0 is 85% busy (DCGM_FI_DEV_GPU_UTIL; 0 when not given)
  {"memory_used_mib": {"0": 9000}}
Standard library only: it runs on the node's system python."""

import argparse
import json
import os
import re
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAULTS = "/var/lib/vcluster/gpus.json"
MODEL = "NVIDIA L40S"
MEMORY_MIB = 46068  # an L40S's framebuffer as DCGM reports it (48 GB)
FIELDS = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
)


def state() -> dict:
    try:
        with open(FAULTS) as handle:
            return json.load(handle)
    except (FileNotFoundError, ValueError):
        return {}


def gpus() -> list[int]:
    return sorted(int(m[1]) for n in os.listdir("/dev") if (m := re.fullmatch(r"nvidia(\d+)", n)))


def jobs(directory: str, gpu: int) -> list[str]:
    try:
        with open(os.path.join(directory, str(gpu))) as handle:
            return handle.read().split()
    except FileNotFoundError:
        return []


def exposition(directory: str) -> str:
    found = state()
    lost = set(found.get("lost", []))
    util = {int(k): float(v) for k, v in found.get("util", {}).items()}
    used = {int(k): float(v) for k, v in found.get("memory_used_mib", {}).items()}
    host = socket.gethostname()
    series = []
    for gpu in gpus():
        if gpu in lost:
            continue
        base = (f'gpu="{gpu}",UUID="GPU-{gpu:08x}-0000-0000-0000-vcluster0000",'
                f'device="nvidia{gpu}",modelName="{MODEL}",Hostname="{host}"')  # fmt: skip
        values = {
            "DCGM_FI_DEV_GPU_UTIL": util.get(gpu, 0.0),
            "DCGM_FI_DEV_FB_USED": used.get(gpu, 0.0),
            "DCGM_FI_DEV_FB_FREE": MEMORY_MIB - used.get(gpu, 0.0),
            "DCGM_FI_DEV_GPU_TEMP": 30.0 + util.get(gpu, 0.0) / 2,
            "DCGM_FI_DEV_XID_ERRORS": 0.0,
        }
        held = jobs(directory, gpu)
        labels = [f'{base},hpc_job="{job}"' for job in held] or [base]
        series.append((values, labels))
    lines = []
    for name, kind, text in FIELDS:
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        for values, labels in series:
            lines += [f"{name}{{{label}}} {values[name]:g}" for label in labels]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", default=":9400")
    parser.add_argument("--hpc-job-mapping-dir", default="")
    args = parser.parse_args()
    host, _, port = args.address.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/metrics":
                self.send_error(404)
                return
            body = exposition(args.hpc_job_mapping_dir).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *values: object) -> None:
            return

    ThreadingHTTPServer((host or "0.0.0.0", int(port)), Handler).serve_forever()


if __name__ == "__main__":
    main()
