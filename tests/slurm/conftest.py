"""Real Slurm on loopback: munged, slurmctld and slurmd started by the tests.

Every daemon runs in the foreground (-D / -F) as a child of the test and is stopped by its
pid at teardown. Each test gets its own directory, ports and munge socket, so tests can run
in parallel. With CI=true a missing binary fails the test; elsewhere it skips.

slurmctld runs as SlurmUser=slurm, as the rendered slurm.conf says and production does (the
reasons it stamps, and the files it may write, are those of that user): started as root, it
drops to `slurm`, so the test's directory is reachable by that user and what slurmctld writes
(state, logs, pid file) belongs to it. Debian's slurm packages create the user; it is created
here if missing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

from slurm.slurm_root import (
    command_env,
    has_plugin,
    localize,
    missing_commands,
    slurm_root,
    version_under_test,
)
from slurmstack import slurm_releases
from slurmstack.checks.slurm import is_accounting_key
from slurmstack.contract import TOPOLOGY_CONF_PATH, TOPOLOGY_YAML_PATH
from slurmstack.plan import ClusterPlan, build_plan
from support.examples import example_plan as example_plan_of_record

BINARIES = ("munged", "slurmctld", "slurmd", "scontrol", "srun", "sinfo", "unshare")
SLURM_USER = "slurm"  # the rendered SlurmUser


def ensure_slurm_user() -> pwd.struct_passwd:
    """The `slurm` user, as Debian's slurm packages create it (a system user, no login)."""
    try:
        return pwd.getpwnam(SLURM_USER)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SLURM_USER],
            check=True,
            capture_output=True,
            timeout=30,
        )
        return pwd.getpwnam(SLURM_USER)


def require_binaries() -> None:
    root = slurm_root()
    if root is not None:  # the Slurm of another root file system (see slurm_root.py)
        missing = missing_commands(root)
        if missing:
            pytest.fail(f"{root} lacks {missing}: build it with .ci/slurm-chroot")
    missing = [b for b in BINARIES if root is None and shutil.which(b) is None]
    if missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {missing} are not installed (apt: slurmctld slurmd munge)")
        pytest.skip(f"not installed: {missing}")
    if os.geteuid() != 0:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but the Slurm tests need root (daemons, mount namespaces)")
        pytest.skip("the Slurm tests need root")


def pinned_version_under_test() -> str:
    """The pinned release of the line the Slurm under test belongs to (the older leg's 24.11.5
    on Debian 13's 24.11): the definitions the tests render are written for it, as a cluster's
    are for its slurm.version. The version of record when nothing is under test."""
    version = version_under_test()
    if version is None:
        return slurm_releases.version_of_record()
    line = tuple(map(int, slurm_releases.line_of(version).split(".")))
    pinned = sorted(slurm_releases.sources(), key=lambda v: tuple(map(int, v.split("."))))
    # The pinned release of that line, else the oldest newer one (the host's retired 22.05
    # still runs what is written for 24.11: the accounting tests, until MariaDB comes from
    # the same root as Slurm).
    newer = [v for v in pinned if tuple(map(int, slurm_releases.line_of(v).split("."))) >= line]
    return newer[0] if newer else slurm_releases.version_of_record()


def example_plan(stem: str) -> ClusterPlan:
    """An example's plan, its slurm.version the pinned release of the Slurm under test."""
    spec = example_plan_of_record(stem).spec
    version = pinned_version_under_test()
    if spec.slurm.version == version:
        return example_plan_of_record(stem)
    slurm = spec.slurm.model_copy(update={"version": version})
    return build_plan(spec.model_copy(update={"slurm": slurm}))


# Ports for the tests' daemons: below the kernel's ephemeral range (32768-60999 by default),
# so no client socket of this machine is ever given one, and each held by a lock on a file
# named after it from the moment it is chosen until the daemon using it is stopped: a port
# reserved by one test (in this process, another xdist worker, or another run) is never
# chosen by a second one, and nothing listening on it already is taken either.
PORT_RANGE = range(20000, 30000)
PORT_LOCKS = Path(tempfile.gettempdir()) / "slurmstack-test-ports"


@dataclass
class PortReservation:
    port: int
    lock: IO[bytes]

    def release(self) -> None:
        self.lock.close()  # closing the file drops its lock


def reserve_port() -> PortReservation:
    PORT_LOCKS.mkdir(exist_ok=True)
    start = (os.getpid() * 7919) % len(PORT_RANGE)  # spread the processes over the range
    for offset in range(len(PORT_RANGE)):
        port = PORT_RANGE[(start + offset) % len(PORT_RANGE)]
        lock = open(PORT_LOCKS / str(port), "ab")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:  # something outside these tests listens there
                lock.close()
                continue
        return PortReservation(port, lock)
    raise RuntimeError(f"no free port in {PORT_RANGE}")


@dataclass
class Cluster:
    """Paths, ports and processes of one test's Slurm."""

    root: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    reservations: list[PortReservation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reservations = [reserve_port(), reserve_port()]
        self.ctld_port, self.slurmd_port = (r.port for r in self.reservations)
        for sub in ("etc", "state", "spool", "log", "run", "munge", "dev", "pmix"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        # slurmctld, as SlurmUser, reaches the test's directory and writes its own parts.
        user = ensure_slurm_user()
        self.root.chmod(0o755)
        for sub in ("state", "log", "run"):
            os.chown(self.root / sub, user.pw_uid, user.pw_gid)

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        # munge's default socket name, so slurmd can find it at /run/munge inside its own
        # mount namespace (see start_slurmd).
        return self.root / "munge" / "munge.socket.2"

    def env(self) -> dict[str, str]:
        # PMIx's temporary directories (Slurm's mpi/pmix: SLURM_PMIX_SRV_TMPDIR for the
        # server's spmix_appdir_*, SLURM_PMIX_TMPDIR for the clients', else TMPDIR, else /tmp)
        # in this test's own directory: another run's stale /tmp/spmix_appdir_* cannot break srun.
        pmix = str(self.root / "pmix")
        own = {"SLURM_CONF": str(self.conf), "SLURM_PMIX_SRV_TMPDIR": pmix}
        own |= {"SLURM_PMIX_TMPDIR": pmix, "TMPDIR": pmix}
        return command_env({**os.environ, **own}, self.root)

    def spawn(self, cmd: list[str], log: str) -> subprocess.Popen[bytes]:
        out = open(self.root / "log" / log, "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(localize(cmd), stdout=out, stderr=subprocess.STDOUT, env=self.env())
        self.procs.append(proc)
        return proc

    def start_munged(self) -> None:
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.spawn(
            [
                "munged",
                "--foreground",
                "--force",
                f"--socket={self.munge_socket}",
                f"--key-file={key}",
                f"--pid-file={self.root / 'run' / 'munged.pid'}",
                f"--log-file={self.root / 'log' / 'munged.log'}",
                f"--seed-file={self.root / 'munge' / 'seed'}",
            ],
            "munged.out",
        )
        wait_for(self.munge_socket.exists, "munged socket", self)

    def start_slurmctld(self) -> None:
        proc = self.spawn(["slurmctld", "-D", "-f", str(self.conf)], "slurmctld.out")

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"slurmctld exited {proc.returncode}:\n{self.logs()}")
            return self.scontrol("ping", check=False).returncode == 0

        wait_for(ready, "slurmctld", self)

    def start_slurmd(self, args: list[str], name: str) -> subprocess.Popen[bytes]:
        """slurmd as a node would run it. Slurm 22.05's slurmd has no --authinfo, so before
        it has fetched slurm.conf it can only reach munge at the default socket path: it
        runs in its own mount namespace where this test's munge directory is /run/munge."""
        script = 'mkdir -p /run/munge && mount --bind "$0" /run/munge && exec "$@"'
        cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
        return self.spawn([*cmd, str(self.munge_socket.parent), *args], f"slurmd-{name}.out")

    def scontrol(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run(["scontrol", *args], self, check=check)

    def logs(self) -> str:
        out = []
        for path in sorted((self.root / "log").glob("*")):
            text = path.read_text(errors="replace")
            out.append(f"--- {path.name}\n{text[-3000:]}")
        return "\n".join(out)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        # slurmstepd outlives slurmd (a session of its own): a job still running when the test
        # ends would stay behind, so every one working in this test's directory goes too.
        for pid in stepds_under(self.root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for reservation in self.reservations:
            reservation.release()


def stepds_under(root: Path) -> list[int]:
    """The pids of slurmstepd processes whose working directory is inside ``root``. Matched by
    the directory's own (random) name: a step in a Slurm root's chroot shows its directory
    through that root's path."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "comm").read_text().strip() != "slurmstepd":
                continue
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if f"/{root.name}/" in f"{cwd}/":
            found.append(int(proc.name))
    return found


def run(cmd: list[str], cluster: Cluster, check: bool = True, timeout: float = 30):
    result = subprocess.run(
        localize(cmd), env=cluster.env(), capture_output=True, text=True, timeout=timeout
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"{cmd} -> {result.returncode}\n{result.stdout}\n{result.stderr}\n{cluster.logs()}"
        )
    return result


def wait_for(predicate, what: str, cluster: Cluster, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}\n{cluster.logs()}")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """A Slurm of the test's own, in a directory outside pytest's tmp_path (whose parents only
    root may enter), removed at teardown."""
    require_binaries()
    root = Path(tempfile.mkdtemp(prefix="slurmstack-slurm-"))
    try:
        c = Cluster(root)
        try:
            yield c
        finally:
            c.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- the rendered configuration, adapted to loopback ----------------------------------


# Keys the test replaces: where this host keeps state, logs and ports (SlurmUser stays the
# rendered `slurm`). ProctrackType and TaskPlugin are replaced ONLY in this test copy: cgroup
# process tracking and task/cgroup need a delegated cgroup v2 tree, which this container
# does not give; the nodes use the rendered proctrack/cgroup and task/cgroup,task/affinity.
# MpiDefault=none only where the Slurm under test has no mpi/pmix plugin: Debian's 26.05 is
# built without PMIx (forky's PMIx is a 7.0 release candidate, which Slurm 26.05 does not
# build against); the image's own build has it (templates/image/build.sh refuses a build
# without it).
def substitutions(cluster: Cluster, task_prolog: Path) -> dict[str, str]:
    r = cluster.root
    mpi = {} if has_plugin("mpi_pmix") else {"MpiDefault": "none"}
    return {
        **mpi,
        "SlurmctldHost": "localhost",
        "SlurmctldPort": str(cluster.ctld_port),
        "SlurmdPort": str(cluster.slurmd_port),
        "StateSaveLocation": str(r / "state"),
        "SlurmdSpoolDir": str(r / "spool" / "%n"),
        "SlurmctldPidFile": str(r / "run" / "slurmctld.pid"),
        "SlurmdPidFile": str(r / "run" / "slurmd-%n.pid"),
        "SlurmctldLogFile": str(r / "log" / "slurmctld.log"),
        "SlurmdLogFile": str(r / "log" / "slurmd-%n.log"),
        "TaskProlog": str(task_prolog),
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
    }


def test_only_lines(cluster: Cluster) -> list[str]:
    return [
        # The test's own munged socket.
        f"AuthInfo=socket={cluster.munge_socket}",
        # A node's --conf declares the instance type's CPUs and memory (192 CPUs, 2 TB on a
        # p5); this machine has 2 cores: keep the declared values instead of draining.
        "SlurmdParameters=config_overrides",
    ]


def _key(line: str, sep: str = "=") -> str | None:
    head = line.split("#", 1)[0]
    if sep not in head:
        return None
    return head.split(sep, 1)[0].strip()


def replace_keys(text: str, values: dict[str, str], sep: str = "=") -> str:
    """Each ``key<sep>value`` line of ``text`` whose key is in ``values`` gets the test's
    value; every key must be found (the rendered file still sets it)."""
    out, seen = [], set()
    for line in text.splitlines():
        key = _key(line, sep)
        if key in values:
            out.append(f"{key}{sep}{values[key]}")
            seen.add(key)
        else:
            out.append(line)
    assert seen == set(values), f"the rendered file lacks {set(values) - seen}"
    return "\n".join(out) + "\n"


def without_accounting(rendered: str) -> str:
    """The rendered slurm.conf less the keys slurm.accounting writes: the slurm tests run no
    slurmdbd (slurmctld refuses GPU TRES without one); tests/accounting runs those lines
    against a real slurmdbd."""
    lines = [line for line in rendered.splitlines() if not is_accounting_key(_key(line) or "")]
    return "\n".join(lines) + "\n"


def adapt_slurm_conf(
    rendered: str,
    cluster: Cluster,
    task_prolog: Path,
    overrides: dict[str, str] | None = None,
    accounting: bool = False,
) -> str:
    """The rendered slurm.conf with this test's substitutions, plus ``overrides``: rendered
    keys one test changes in its own copy only (each must be a key the file sets). Without
    ``accounting``, the accounting keys are left out (without_accounting)."""
    rendered = rendered if accounting else without_accounting(rendered)
    overrides = {**job_program_stand_ins(rendered, cluster), **(overrides or {})}
    subs = {**substitutions(cluster, task_prolog), **overrides}
    text = replace_keys(rendered, subs)
    text += "".join(f"{line}\n" for line in test_only_lines(cluster))
    assert_used_as_rendered(rendered, text, cluster, task_prolog, overrides)
    return text


# The GPU pools' Prolog and Epilog (which job holds each GPU, for dcgm-exporter) launch the
# node agent, which is not installed on this machine; slurmd drains a node whose Prolog fails
# and revokes the job. Here they are a program that records its call and succeeds, so the
# keys stay where the rendered file puts them.
JOB_PROGRAMS = ("Prolog", "Epilog")


def job_program_stand_ins(rendered: str, cluster: Cluster) -> dict[str, str]:
    keys = {_key(line) for line in rendered.splitlines()} & set(JOB_PROGRAMS)
    if not keys:
        return {}
    program = cluster.root / "etc" / "job-program.sh"
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text(f'#!/bin/sh\necho "$0 $SLURM_JOB_ID" >> {cluster.root}/job-program.log\n')
    program.chmod(0o755)
    return {key: str(program) for key in sorted(keys)}


def assert_used_as_rendered(
    rendered: str,
    copy: str,
    cluster: Cluster,
    prolog: Path,
    overrides: dict[str, str] | None = None,
) -> None:
    """Every line of the test copy is the rendered line, except the substituted keys, and
    the only additions are the test-only lines at the end."""
    subs = {**substitutions(cluster, prolog), **(overrides or {})}
    r_lines, c_lines = rendered.splitlines(), copy.splitlines()
    extra = test_only_lines(cluster)
    assert c_lines[len(r_lines) :] == extra
    for r, c in zip(r_lines, c_lines, strict=False):
        if r != c:
            assert _key(r) == _key(c) and _key(r) in subs, (r, c)


def adapt_gres_conf(rendered: str, cluster: Cluster) -> str:
    """Device files under the test's directory (character devices made by the test)."""
    return rendered.replace("File=/dev/", f"File={cluster.root / 'dev'}/")


def make_devices(cluster: Cluster, prefix: str, count: int, major: int = 195) -> None:
    for i in range(count):
        path = cluster.root / "dev" / f"{prefix}{i}"
        if not path.exists():
            os.mknod(path, 0o666 | 0o020000, os.makedev(major, i))


def write_config(
    cluster: Cluster,
    files: dict[str, str],
    task_prolog_text: str,
    overrides: dict[str, str] | None = None,
    accounting: bool = False,
) -> None:
    """Write the head node's rendered Slurm files into the test's etc/ (``overrides`` and
    ``accounting``: see adapt_slurm_conf)."""
    prolog = cluster.root / "etc" / "task-prolog.sh"
    prolog.write_text(task_prolog_text)
    prolog.chmod(0o755)
    etc = cluster.root / "etc"
    etc.joinpath("slurm.conf").write_text(
        adapt_slurm_conf(files["/etc/slurm/slurm.conf"], cluster, prolog, overrides, accounting)
    )
    etc.joinpath("gres.conf").write_text(adapt_gres_conf(files["/etc/slurm/gres.conf"], cluster))
    etc.joinpath("cgroup.conf").write_text(files["/etc/slurm/cgroup.conf"])
    etc.joinpath("plugstack.conf").write_text(files["/etc/slurm/plugstack.conf"])
    if TOPOLOGY_CONF_PATH in files:  # with TopologyPlugin=topology/tree (docs/topology.md)
        etc.joinpath("topology.conf").write_text(files[TOPOLOGY_CONF_PATH])
    if TOPOLOGY_YAML_PATH in files:  # a tree and UltraServer pools' blocks
        etc.joinpath("topology.yaml").write_text(files[TOPOLOGY_YAML_PATH])
