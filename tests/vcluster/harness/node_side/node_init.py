#!/usr/bin/python3
"""PID 1 of a virtual-cluster node (runs in the node's network, mount, UTS and PID namespaces).

It lays out the node's root (spec: a JSON file the harness writes), says it is ready, then
reaps orphans until it is killed, and when it dies the kernel kills every process of the node:
stopping a node is one signal. Standard library only: it runs on the system python.

Spec keys: cgroup_hold (an empty directory); run_directory and keep_visible [path] (kept
visible in the private /tmp);
hostname; overlays [{target, upper, work}]; tmpfs [{target, options}];
devices [{path, major, minor}]; dirs [path]; files [{path, content}] (whatever was at the path
in the layer below, a device included, is replaced); links [{path, target}]; ready (a file to
create).
"""

import grp
import json
import os
import pwd
import signal
import socket
import subprocess
import sys


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def fresh_sysfs(hold: str) -> None:
    """A sysfs of this network namespace (its /sys/class/net lists the node's interfaces),
    keeping the host's cgroup mounts, which slurmd's cgroup plugin looks for."""
    os.makedirs(hold, exist_ok=True)
    mount("--rbind", "/sys/fs/cgroup", hold)
    subprocess.run(["umount", "--lazy", "/sys"], check=True)
    mount("-t", "sysfs", "sysfs", "/sys")
    mount("--move", hold, "/sys/fs/cgroup")


def private_tmp(keep: list) -> None:
    """A /tmp of the node's own (Slurm, PMIx and Open MPI keep per-host files there under
    names that would collide across nodes), in which the directories ``keep`` stay visible at
    their paths: the run's directory (the shared and per-node directories the stand-ins
    mount) and, when the checkout itself lies under /tmp, the checkout and its environment
    (the stand-ins' scripts and the modules linked into the node's python). Needs the node's
    /run first: the directories wait there while /tmp is replaced."""
    under_tmp = sorted({path for path in keep if path.startswith("/tmp/")})
    # A directory inside another kept one comes along with it.
    outermost = [p for p in under_tmp if not any(p.startswith(o + "/") for o in under_tmp)]
    holds = []
    for index, path in enumerate(outermost):
        hold = f"/run/vcluster-keep-{index}"
        os.makedirs(hold)
        mount("--rbind", path, hold)
        holds.append((hold, path))
    mount("-t", "tmpfs", "-o", "mode=1777", "tmpfs", "/tmp")
    for hold, path in holds:
        os.makedirs(path)
        mount("--move", hold, path)


TMPFILES_DIRS = ("/usr/lib/tmpfiles.d", "/etc/tmpfiles.d")  # a name in /etc overrides /usr/lib's


def runtime_directories() -> None:
    """What systemd-tmpfiles does at boot for the node's fresh /run: the packages' "d" lines
    (MariaDB's /run/mysqld, for one), with their mode and owner."""
    files = {}
    for directory in TMPFILES_DIRS:
        if os.path.isdir(directory):
            files.update({name: os.path.join(directory, name) for name in os.listdir(directory)})
    for name in sorted(files):
        with open(files[name]) as handle:
            lines = handle.read().splitlines()
        for line in lines:
            words = line.split()
            if len(words) < 2 or words[0] not in ("d", "D") or not words[1].startswith("/run/"):
                continue
            path, mode = words[1], words[2] if len(words) > 2 else "-"
            user, group = [*words[3:5], "-", "-"][:2]
            if os.path.exists(path):
                continue
            os.makedirs(path)
            os.chmod(path, int(mode, 8) if mode != "-" else 0o755)
            try:
                uid = pwd.getpwnam(user).pw_uid if user != "-" else 0
                gid = grp.getgrnam(group).gr_gid if group != "-" else 0
            except KeyError:
                continue  # a package's user this image does not have
            os.chown(path, uid, gid)


def lay_out(spec: dict) -> None:
    fresh_sysfs(spec["cgroup_hold"])
    for layer in spec["overlays"]:
        options = f"lowerdir={layer['target']},upperdir={layer['upper']},workdir={layer['work']}"
        mount("-t", "overlay", "overlay", "-o", options, layer["target"])
    for fs in spec["tmpfs"]:
        os.makedirs(fs["target"], exist_ok=True)
        mount("-t", "tmpfs", "-o", fs["options"], "tmpfs", fs["target"])
    private_tmp([spec["run_directory"], *spec.get("keep_visible", [])])
    runtime_directories()
    # The /dev overlay hides the host's /dev/pts: a private instance for this node.
    os.makedirs("/dev/pts", exist_ok=True)
    mount("-t", "devpts", "-o", "newinstance,ptmxmode=0666", "devpts", "/dev/pts")
    for device in spec["devices"]:
        if not os.path.exists(device["path"]):
            os.mknod(device["path"], 0o666 | 0o020000, os.makedev(device["major"], device["minor"]))
            os.chmod(device["path"], 0o666)
    for path in spec["dirs"]:
        os.makedirs(path, exist_ok=True)
    for file in spec.get("files", []):
        os.makedirs(os.path.dirname(file["path"]), exist_ok=True)
        if os.path.lexists(file["path"]):
            os.unlink(file["path"])  # never write through to the host's device (/dev/kmsg)
        with open(file["path"], "w") as handle:
            handle.write(file["content"])
    for link in spec["links"]:
        os.makedirs(os.path.dirname(link["path"]), exist_ok=True)
        if os.path.lexists(link["path"]):
            os.unlink(link["path"])
        os.symlink(link["target"], link["path"])
    socket.sethostname(spec["hostname"])
    with open("/etc/hostname", "w") as handle:
        handle.write(spec["hostname"] + "\n")


def reap(_signum: int, _frame: object) -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> None:
    with open(sys.argv[1]) as handle:
        spec = json.load(handle)
    lay_out(spec)
    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(spec["ready"], "w") as handle:
        handle.write(str(os.getpid()))
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
