#!/usr/bin/python3
"""RebootProgram on a virtual-cluster node: a stand-in (stand-in "reboot"). A namespace cannot
reboot, and this machine's /usr/sbin/reboot would talk to its own systemd. What a reboot does
for Slurm is done instead: the request is recorded in /var/log/vcluster/reboot.log, the node's
GPU faults are cleared (a reset activates pending retirements), and
slurmd, detached from the one that ran this program, is stopped and started again with `-b`
(slurmd reports a fresh boot, as Slurm's own tests do), so slurmctld sees the node come back and
returns it to service as `scontrol reboot ... nextstate=RESUME` asked. The boot's own steps are
not run again. Standard library only."""

import os
import signal
import subprocess
import sys
import time

LOG = "/var/log/vcluster/reboot.log"
PIDFILE = "/run/vcluster-units/slurmstack-slurmd.service.pid"  # the systemctl stand-in's
FAULTS = "/var/lib/vcluster/gpus.json"
WAIT_SECONDS = 30
SLURMD_OWN_ENV = ("SLURMD_RECONF", "SLURMD_BOOT_TIME")


def note(text: str) -> None:
    os.makedirs(os.path.dirname(LOG), exist_ok=True)
    with open(LOG, "a") as handle:
        handle.write(f"{time.time():.0f} {text}\n")


def restart_slurmd() -> None:
    time.sleep(1)  # slurmd returns from the reboot request first
    with open(PIDFILE) as handle:
        pid = int(handle.read())
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        argv = [a.decode() for a in handle.read().split(b"\0") if a]
    with open(f"/proc/{pid}/environ", "rb") as handle:
        env = dict(e.decode().split("=", 1) for e in handle.read().split(b"\0") if b"=" in e)
    # What slurmd (24.05+) set for its own re-execution on a reconfigure (its listening socket's
    # descriptor, its boot time, its configuration cache) is not the unit's: a fresh boot
    # starts without it, and a new slurmd given a descriptor it does not hold stops.
    env = {k: v for k, v in env.items() if not k.startswith(SLURMD_OWN_ENV)}
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + WAIT_SECONDS
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.2)
    if os.path.exists(FAULTS):
        os.unlink(FAULTS)
    with open(LOG, "ab") as log:
        new = subprocess.Popen(
            [*argv, "-b"], env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    with open(PIDFILE, "w") as handle:
        handle.write(str(new.pid))
    note(f"slurmd started again with -b (pid {new.pid})")


def main() -> int:
    note(f"reboot requested {' '.join(sys.argv[1:])}")
    if os.fork():
        return 0  # slurmd's system() returns at once
    os.setsid()
    if os.fork():
        os._exit(0)
    try:
        restart_slurmd()
    except Exception as exc:
        note(f"restart failed: {exc}")
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
