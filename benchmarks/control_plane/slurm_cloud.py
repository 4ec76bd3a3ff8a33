"""A real slurmctld (and munged) on loopback holding the benchmark's nodes: each elastic pool's
CLOUD nodes in an exclusive partition (as the rendered slurm.conf has them), and the always-on
pools' nodes at their instances' addresses. Its ResumeProgram only records what slurmctld
passes (the hostlist and a copy of SLURM_RESUME_FILE): the benchmark runs the real resume
program on each call, in its own process, against the throttling proxy.

Reuses the Slurm tests' daemons (tests/slurm/conftest.py: ports, SlurmUser, munged)."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from slurm.conftest import SLURM_USER, Cluster, ensure_slurm_user  # noqa: E402
from slurm.slurm_root import localize, slurm_root  # noqa: E402

# A node whose launch failed keeps its own name for an address, and slurmctld messages it when
# it goes DOWN (its job is killed). The VPC's resolver has no such name either, but this
# machine has no resolver at all, and Debian's Slurm retries a failed lookup for 10 s
# (stand-in `vpc-dns` of the virtual cluster): slurmctld runs in a mount namespace of its own
# where host names come from its own hosts file only, which gives every CLOUD node loopback
# (where no slurmd listens: the message fails at once).
NSSWITCH = "passwd: files\ngroup: files\nshadow: files\nhosts: files\n"
RECORDER = """#!/bin/sh
# ResumeProgram of the benchmark: what slurmctld passes, kept for the benchmark to act on.
n=$(date +%s%N)
[ -n "$SLURM_RESUME_FILE" ] && cp "$SLURM_RESUME_FILE" "{dir}/$n.json"
printf '%s\\n' "$1" > "{dir}/$n.tmp" && mv "{dir}/$n.tmp" "{dir}/$n.hosts"
"""


@dataclass(frozen=True)
class ElasticPartition:
    pool: str
    hostlist: str  # its CLOUD nodes, e.g. p0-e[1-256]


@dataclass(frozen=True)
class ResumeCall:
    hostlist: str
    resume_file: Path | None


class CloudSlurm:
    def __init__(self) -> None:
        ensure_slurm_user()
        self.root = Path(tempfile.mkdtemp(prefix="slurmstack-bench-"))
        self.cluster = Cluster(self.root)
        self.calls_dir = self.root / "resumes"
        self.calls_dir.mkdir()
        user = pwd.getpwnam(SLURM_USER)
        os.chown(self.calls_dir, user.pw_uid, user.pw_gid)
        self.recorder = self.root / "etc" / "resume-recorder.sh"
        self.recorder.write_text(RECORDER.format(dir=self.calls_dir))
        self.recorder.chmod(0o755)
        self._seen: set[str] = set()

    def start(self, elastic: list[ElasticPartition], always_on: dict[str, str]) -> None:
        """``always_on``: node name -> address."""
        c = self.cluster
        lines = [
            "ClusterName=bench",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={c.ctld_port}",
            f"SlurmdPort={c.slurmd_port}",
            f"SlurmUser={SLURM_USER}",
            "AuthType=auth/munge",
            f"AuthInfo=socket={c.munge_socket}",
            f"StateSaveLocation={self.root / 'state'}",
            f"SlurmdSpoolDir={self.root / 'spool'}",
            f"SlurmctldPidFile={self.root / 'run' / 'slurmctld.pid'}",
            f"SlurmctldLogFile={self.root / 'log' / 'slurmctld.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            "ReturnToService=2",
            "TreeWidth=65533",
            "MessageTimeout=30",  # as rendered
            # No node of this slurmctld ever registers: none is marked not responding while the
            # benchmark runs, and none powering up times out.
            "SlurmdTimeout=3600",
            f"ResumeProgram={self.recorder}",
            "ResumeFailProgram=/bin/true",
            "SuspendProgram=/bin/true",
            "ResumeTimeout=3600",
            "SuspendTime=3600",
            "SuspendTimeout=60",
            "ResumeRate=0",
            "SuspendRate=0",
        ]
        if self.version() < (23, 2):  # 22.05 hides powered-down CLOUD nodes without it
            lines.append("PrivateData=cloud")
        for part in elastic:
            lines.append(f"NodeName={part.hostlist} CPUs=2 RealMemory=1000 State=CLOUD")
            lines.append(
                f"PartitionName={part.pool} Nodes={part.hostlist} MaxTime=INFINITE State=UP "
                "OverSubscribe=EXCLUSIVE"
            )
        for name, address in sorted(always_on.items()):
            lines.append(f"NodeName={name} NodeAddr={address} CPUs=2 RealMemory=1000")
        if always_on:
            lines.append("PartitionName=always Nodes=ALL MaxTime=INFINITE State=UP Default=YES")
        c.conf.write_text("\n".join(lines) + "\n")
        c.start_munged()
        from slurmstack.node.power.hostlist import expand

        self._start_slurmctld([n for part in elastic for n in expand(part.hostlist)])

    def _start_slurmctld(self, cloud_nodes: list[str]) -> None:
        c = self.cluster
        etc = self.root / "etc"
        (etc / "nsswitch.conf").write_text(NSSWITCH)
        hosts = ["127.0.0.1 localhost", *(f"127.0.0.1 {name}" for name in cloud_nodes)]
        (etc / "hosts").write_text("\n".join(hosts) + "\n")
        root = slurm_root()
        into = "" if root is None else str(root)
        script = (
            f'mount --bind "$0/nsswitch.conf" {into}/etc/nsswitch.conf && '
            f'mount --bind "$0/hosts" /etc/hosts && exec "$@"'
        )
        unshare = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
        proc = c.spawn([*unshare, str(etc), "slurmctld", "-D", "-f", str(c.conf)], "ctld.out")
        deadline = time.monotonic() + 60
        while c.scontrol("ping", check=False).returncode != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"slurmctld did not start:\n{c.logs()}")
            time.sleep(0.2)

    def version(self) -> tuple[int, int]:
        """Slurm's (major, minor), e.g. (22, 5), from `slurmctld -V` ("slurm 22.05.8")."""
        words = self.run(["slurmctld", "-V"]).stdout.split()
        major, minor = words[-1].split(".")[:2]
        return int(major), int(minor)

    def env(self) -> dict[str, str]:
        return self.cluster.env()

    def run(self, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        """The agent's command runner: Slurm's commands reach this slurmctld."""
        return subprocess.run(
            localize(cmd), env=self.env(), check=check, text=True, capture_output=True,
            timeout=120,
        )  # fmt: skip

    def submit(self, partition: str, nodes: int, array: int = 0) -> None:
        cmd = ["sbatch", "-p", partition, "-N", str(nodes), "--exclusive", "--no-requeue"]
        cmd += ["-o", "/dev/null"]
        if array:
            cmd.append(f"--array=1-{array}")
        self.run([*cmd, "--wrap", "sleep 3600"])

    def resume_calls(self, nodes: int, timeout: float) -> list[ResumeCall]:
        """The ResumeProgram calls slurmctld made, until they cover ``nodes`` nodes in all
        (or ``timeout`` passes)."""
        from slurmstack.node.power.hostlist import expand

        deadline, covered, calls = time.monotonic() + timeout, 0, []
        while covered < nodes and time.monotonic() < deadline:
            for hosts in sorted(self.calls_dir.glob("*.hosts")):
                if hosts.name in self._seen:
                    continue
                self._seen.add(hosts.name)
                hostlist = hosts.read_text().strip()
                resume_file = hosts.with_suffix(".json")
                calls.append(ResumeCall(hostlist, resume_file if resume_file.exists() else None))
                covered += len(expand(hostlist))
            time.sleep(0.2)
        return calls

    def stop(self) -> None:
        import shutil

        try:
            self.cluster.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
