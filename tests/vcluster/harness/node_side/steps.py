#!/usr/bin/python3
"""Stand-ins for the runcmd steps that need hardware (see ../standins.py): run in the node, in
place of `slurmstack-node <step>`, reading the same node.json the agent reads.

  steps.py scratch DIR        the pool's scratch path: DIR (this node's own) bind-mounted there
  steps.py mounts DIR         each shared file system: DIR/<kind> (shared by all nodes) there;
                              one of yours (a file_system_id): DIR/existing/<its source>, the
                              source the agent resolves from the parameters the stack published
  steps.py state-volume DIR   (head) the state mount: DIR (the cluster's) bind-mounted there;
                              the state directory made, owned by slurm, mode 0700 (as the agent)

Standard library only, but for a file system of yours: the agent's own resolution of its
source (slurmstack.node.boot.mounts.existing_source, with boto3 from the node's python path).
"""

import os
import pwd
import subprocess
import sys
import urllib.parse

# The checkout's contract (the node's filesystem is this machine's): the same node.json reader
# the agent uses.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 4, "infra"))
from slurmstack.contract import NODE_CONFIG_PATH, Mount, NodeConfig, load_document


def bind(source: str, target: str) -> None:
    os.makedirs(source, exist_ok=True)
    os.makedirs(target, exist_ok=True)
    if subprocess.run(["mountpoint", "-q", target]).returncode != 0:
        subprocess.run(["mount", "--bind", source, target], check=True)


def existing_directory(directory: str, mount: Mount) -> str:
    """Where a file system of yours is served from: named by the source the agent would mount
    (e.g. fs-....fsx.us-east-1.amazonaws.com@tcp:/<mount name>), so a node that resolved the
    wrong names mounts an empty directory. The harness names it the same way
    (standins.existing_source_directory)."""
    from slurmstack.node.boot.mounts import existing_source
    from slurmstack.node.context import Context

    source, fstype, _ = existing_source(Context(), mount)
    return os.path.join(directory, "existing", fstype, urllib.parse.quote(source, safe="@:"))


def main(argv: list[str]) -> int:
    step, directory = argv
    with open(NODE_CONFIG_PATH) as handle:
        config = load_document(NodeConfig, handle.read())
    if step == "scratch":
        if config.scratch is not None:
            bind(directory, config.scratch.mount)
            os.chmod(config.scratch.mount, 0o1777)
    elif step == "mounts":
        for mount in config.mounts:
            if mount.file_system_id:
                bind(existing_directory(directory, mount), mount.path)
            else:
                bind(os.path.join(directory, mount.kind.value), mount.path)
    elif step == "state-volume" and config.state_volume is not None:
        volume = config.state_volume
        bind(directory, volume.mount)
        os.makedirs(volume.state_dir, exist_ok=True)
        slurm = pwd.getpwnam("slurm")
        os.chown(volume.state_dir, slurm.pw_uid, slurm.pw_gid)
        os.chmod(volume.state_dir, 0o700)
    else:
        print(f"steps.py: unknown step {step}", file=sys.stderr)
        return 1
    print(f"virtual cluster: {step} stand-in done ({directory})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
