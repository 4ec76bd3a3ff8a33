#!/usr/bin/python3
"""Stand-ins for the runcmd steps that need hardware (see ../standins.py): run in the node, in
place of `slurmstack-node <step>`, reading the same node.json the agent reads.

  steps.py scratch DIR        the pool's scratch path: DIR (this node's own) bind-mounted there
  steps.py mounts DIR         each shared file system: DIR/<kind> (shared by all nodes) there
  steps.py state-volume DIR   (head) the state mount: DIR (the cluster's) bind-mounted there;
                              the state directory made, owned by slurm, mode 0700 (as the agent)

Standard library only: it runs on the node's system python.
"""

import json
import os
import pwd
import subprocess
import sys

NODE_CONFIG = "/etc/slurmstack/node.json"


def bind(source: str, target: str) -> None:
    os.makedirs(source, exist_ok=True)
    os.makedirs(target, exist_ok=True)
    if subprocess.run(["mountpoint", "-q", target]).returncode != 0:
        subprocess.run(["mount", "--bind", source, target], check=True)


def main(argv: list[str]) -> int:
    step, directory = argv
    with open(NODE_CONFIG) as handle:
        config = json.load(handle)
    if step == "scratch":
        scratch = config.get("scratch")
        if scratch:
            bind(directory, scratch["mount"])
            os.chmod(scratch["mount"], 0o1777)
    elif step == "mounts":
        for mount in config.get("mounts", []):
            bind(os.path.join(directory, mount["kind"]), mount["path"])
    elif step == "state-volume":
        spec = config["state_volume"]
        bind(directory, spec["mount"])
        os.makedirs(spec["state_dir"], exist_ok=True)
        slurm = pwd.getpwnam("slurm")
        os.chown(spec["state_dir"], slurm.pw_uid, slurm.pw_gid)
        os.chmod(spec["state_dir"], 0o700)
    else:
        print(f"steps.py: unknown step {step}", file=sys.stderr)
        return 1
    print(f"virtual cluster: {step} stand-in done ({directory})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
