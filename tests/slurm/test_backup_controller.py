"""Slurm's own backup controller run with slurmstack's rendered configuration of a cluster with
head_node.backup (issue 29): the rendered slurm.conf's two SlurmctldHost lines (addressed here
by their test hosts) and its SlurmctldTimeout (shortened here), and the pool's rendered slurmd
ExecStart with both controllers in --conf-server.

Two slurmctld, the primary ctl-a and the backup ctl-b, each on a host of its own (network and
UTS namespaces, ha_namespaces.py), and one dynamic slurmd on a third host. StateSaveLocation is
one plain directory both controllers see on this machine's file system: it stands in for the
EFS file system both controllers mount on AWS. Each controller keeps its pid file and log in a
directory of its own, as two hosts would.

Which controller is in control is asked of each alone: a client whose slurm.conf names only
that controller gets an answer from it only while it is in control (a controller in standby
answers ESLURM_IN_STANDBY_MODE, which a client with no other controller to try reports).
`scontrol ping` cannot tell: a backup in standby answers pings (backup.c, on_backup_msg). The
node agent's gate (slurmstack.node.active), which decides where the repair controller, the
elastic sweep and the accounting apply run, reads the heartbeat file the controller in control
writes: the test checks that it names the same controller at each step. The handback is the
rendered slurmctld unit's: its ExecStartPre (the agent's handback step) has the backup in
control save Slurm's state and stop, the head's slurmctld starts, and the backup's starts again
(systemd's Restart=always, done here by the test) and stands by.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

from slurm.conftest import (
    Cluster,
    ensure_slurm_user,
    localize,
    pinned_version_under_test,
    write_config,
)
from slurm.ha_namespaces import HostNetwork, host_command, make_network
from slurm.slurm_root import version_under_test
from slurmstack.contract import (
    NODE_CONFIG_PATH,
    NODE_ENV_PATH,
    SLURMCTLD_PORT,
    STATE_SAVE_LOCATION,
    TASK_PROLOG_PATH,
    NodeEnv,
    backup_host,
    dump_document,
    head_host,
    node_name,
    node_name_prefix,
)
from slurmstack.node import active
from slurmstack.node.boot import handback
from slurmstack.node.context import Context
from slurmstack.plan import ClusterPlan
from slurmstack.render import SLURMD_UNIT_PATH, head_files, pool_files
from slurmstack.render.node import node_config
from support.stack import example, plan_of

pytestmark = pytest.mark.slurm

PRIMARY, BACKUP, NODE_HOST = "ctl-a", "ctl-b", "node"
ADDRESSES = {PRIMARY: "10.251.0.1", BACKUP: "10.251.0.2", NODE_HOST: "10.251.0.3"}
# Rendered: 60 s (SLURMCTLD_TIMEOUT_WITH_BACKUP_SECONDS). Short here so the takeover happens
# within the test.
SLURMCTLD_TIMEOUT = 10
# The backup pings the primary every SlurmctldTimeout/3 s and takes over at the first failed
# ping more than SlurmctldTimeout s after the primary's last sign of life (ping answer or
# heartbeat file write, backup.c run_backup): at most SlurmctldTimeout plus one ping interval
# after the kill. This slack is for starting the controller on this busy 2-core machine.
STARTUP_SLACK = 20
# slurmctld writes its state at most every SAVE_MAX_WAIT = 5 s (state_save.c); a change made
# less than that before the primary is killed is not in StateSaveLocation, and the backup never
# learns it (a job it had just started is PENDING again for the backup). The test kills the
# primary only after one more save (without it, the first job was PENDING after the takeover).
STATE_SAVE_WAIT = 5 + 2
STANDBY = "standby mode"  # ESLURM_IN_STANDBY_MODE's message
PROBE_TIMEOUT = 8
# A returning primary asks the backup for control (REQUEST_CONTROL, controller.c
# _shutdown_backup_controller) and starts only on its reply. The backup replies once it is back
# in standby, or when CONTROL_TIMEOUT - 1 s (slurmctld.h: 30 s) have passed (proc_req.c
# _slurm_rpc_request_control). Here, on 24.11 and 26.05, the wait runs out every time: the
# backup logs this line, and only then saves its state ("Saving all slurm state"), in the same
# milliseconds as the primary reads StateSaveLocation ("Old state possible", says the line): 3
# of 7 handbacks done that way lost a job (slurmstack.node.boot.handback). The head's unit
# therefore has the backup save and stop first (the agent's handback step), and the backup
# never sees a REQUEST_CONTROL.
CONTROL_TIMEOUT = 30
RELINQUISH_TIMED_OUT = "REQUEST_CONTROL reply but backup not completely done relinquishing"


@dataclass
class HaCluster:
    cluster: Cluster
    network: HostNetwork
    controllers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        root: Path = self.cluster.root
        return root

    def host_dir(self, controller: str) -> Path:
        """The controller host's own directory, mounted at ``<root>/ctld`` on that host only."""
        return self.root / f"ctld-{controller}"

    def conf_naming_only(self, controller: str) -> Path:
        return self.root / "etc" / f"only-{controller}.conf"

    def start_controller(self, controller: str) -> None:
        own = {str(self.host_dir(controller)): str(self.root / "ctld")}
        slurmctld = ["slurmctld", "-D", "-f", str(self.cluster.conf)]
        cmd = host_command(self.network, controller, controller, own, slurmctld)
        self.controllers[controller] = self.cluster.spawn(cmd, f"slurmctld-{controller}.out")

    def kill_controller(self, controller: str) -> None:
        proc = self.controllers.pop(controller)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)

    def client(
        self, *cmd: str, conf: Path | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """A Slurm command on the node's host (both controllers reachable from there)."""
        env = {**self.cluster.env(), "SLURM_CONF": str(conf or self.cluster.conf)}
        full = [*self.network.enter(NODE_HOST), *localize(list(cmd))]
        result = subprocess.run(full, env=env, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"{cmd}: {result.stdout}{result.stderr}\n{self.logs()}")
        return result

    def in_control(self, controller: str) -> subprocess.CompletedProcess[str]:
        """squeue asked of ``controller`` alone: it succeeds only if that one is in control.
        A client waits up to MessageTimeout (rendered: 30 s) for an answer; a probe gives up
        sooner, so that one request caught as the controller changes mode cannot outlast the
        wait it is polled in."""
        conf = self.conf_naming_only(controller)
        try:
            return self.client("squeue", "-h", conf=conf, check=False, timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(["squeue"], 124, "", "probe timed out")

    def controller_log(self, controller: str) -> str:
        path = self.host_dir(controller) / "slurmctld.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs(self) -> str:
        """Every log, less the backup's complaint at each request sent to it in standby (the
        test's own probes: hundreds of lines)."""
        own = []
        for controller in (PRIMARY, BACKUP):
            lines = self.controller_log(controller).splitlines()
            kept = "\n".join(x for x in lines if "while in standby mode" not in x)
            own.append(f"--- {controller}\n{kept[-6000:]}")
        return "\n".join([self.cluster.logs(), *own])


def poll(ha: HaCluster, condition: Callable[[], bool], what: str, timeout: float) -> float:
    """Seconds until ``condition()`` held, trying every half second: at most ``timeout`` s
    and ``timeout`` * 4 tries (a try can be quick: a refused connection)."""
    start = time.monotonic()
    for _ in range(int(timeout * 4)):
        if condition():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            break
        time.sleep(0.5)
    raise AssertionError(f"not within {timeout} s: {what}\n{ha.logs()}")


@cache
def backup_plan() -> ClusterPlan:
    """cpu-hpc with a backup controller (accounting off: these tests run no slurmdbd), its
    slurm.version the pinned release of the Slurm under test."""
    definition = example("cpu-hpc")
    definition["head_node"]["backup"] = True
    slurm = definition.setdefault("slurm", {})
    slurm["accounting"] = {"enabled": False}
    slurm["version"] = pinned_version_under_test()
    return plan_of(definition)


def write_ha_config(ha: HaCluster) -> None:
    """The rendered head files adapted to loopback (conftest.write_config), SlurmctldTimeout
    shortened, and the two rendered SlurmctldHost lines, head then backup, addressed as the
    primary's and the backup's test hosts."""
    plan = backup_plan()
    rendered = head_files(plan)
    hosts = [x for x in rendered["/etc/slurm/slurm.conf"].splitlines() if "SlurmctldHost=" in x]
    assert hosts == [
        f"SlurmctldHost={head_host(plan.name)}",
        f"SlurmctldHost={backup_host(plan.name)}",
    ]
    files = pool_files(plan, plan.pool("batch"))
    ctld = ha.root / "ctld"
    overrides = {
        "SlurmctldTimeout": str(SLURMCTLD_TIMEOUT),
        "SlurmctldPidFile": str(ctld / "slurmctld.pid"),
        "SlurmctldLogFile": str(ctld / "slurmctld.log"),
    }
    write_config(ha.cluster, rendered, files[TASK_PROLOG_PATH], overrides)
    controllers = iter((PRIMARY, BACKUP))
    lines = [
        f"SlurmctldHost={(c := next(controllers))}({ADDRESSES[c]})"
        if x.startswith("SlurmctldHost=")
        else x
        for x in ha.cluster.conf.read_text().splitlines()
    ]
    ha.cluster.conf.write_text("\n".join(lines) + "\n")
    for controller in (PRIMARY, BACKUP):
        only = [x for x in lines if not x.startswith("SlurmctldHost=") or f"={controller}(" in x]
        ha.conf_naming_only(controller).write_text("\n".join(only) + "\n")


def gate(ha: HaCluster, controller: str) -> str | None:
    """The node agent's answer on ``controller``'s host: why its once-per-cluster loops must
    not run there now (None: they run). Its root holds the rendered node.json, the name
    `params` gives that controller, and Slurm's state directory (the test's)."""
    root = ha.root / f"agent-{controller}"
    if not root.exists():
        config = root / NODE_CONFIG_PATH.lstrip("/")
        config.parent.mkdir(parents=True)
        config.write_text(dump_document(node_config(backup_plan(), None)))
        name = (
            head_host(backup_plan().name)
            if controller == PRIMARY
            else backup_host(backup_plan().name)
        )
        (root / NODE_ENV_PATH.lstrip("/")).write_text(NodeEnv(node_name=name).text())
        state = root / STATE_SAVE_LOCATION.lstrip("/")
        state.parent.mkdir(parents=True)
        state.symlink_to(ha.root / "state")
    return active.standby_reason(Context(root=root))


def agent_context(ha: HaCluster, controller: str) -> Context:
    """The node agent on ``controller``'s host (as gate()), its commands run on the test's
    network with the test's Slurm (scontrol reaches both controllers from there)."""
    gate(ha, controller)  # makes its root: node.json, node.env, the shared state

    def run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**ha.cluster.env(), "SLURM_CONF": str(ha.cluster.conf)}
        full = [*ha.network.enter(NODE_HOST), *localize(list(cmd))]
        return subprocess.run(full, env=env, capture_output=True, text=True, timeout=120,
                              check=check)  # fmt: skip

    return Context(root=ha.root / f"agent-{controller}", run=run)


def acting(ha: HaCluster) -> list[str]:
    """The controllers whose agent would run the repair controller's pass now."""
    return [c for c in (PRIMARY, BACKUP) if gate(ha, c) is None]


def start_node(ha: HaCluster) -> str:
    """The batch pool's slurmd as its rendered unit starts it, the node's address the
    node host's, and both controllers as configuration servers."""
    plan = backup_plan()
    unit = pool_files(plan, plan.pool("batch"))[SLURMD_UNIT_PATH]
    name = node_name(node_name_prefix("batch"), ADDRESSES[NODE_HOST])
    line = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
    # The rendered list, head then backup, at the test hosts' addresses and the test's port.
    port = ha.cluster.ctld_port
    servers = ",".join(f"${{SLURMSTACK_{k}_ADDRESS}}:{SLURMCTLD_PORT}" for k in ("HEAD", "BACKUP"))
    assert f"--conf-server {servers} " in line, line
    line = line.removeprefix("ExecStart=").replace(
        servers, ",".join(f"{ADDRESSES[c]}:{port}" for c in (PRIMARY, BACKUP))
    )
    line = line.replace("${SLURMSTACK_NODE_NAME}", name)
    assert "$" not in line, line
    # Before it has slurm.conf, slurmd reaches munge at the default socket (conftest.start_slurmd).
    munge = {str(ha.cluster.munge_socket.parent): "/run/munge"}
    cmd = host_command(ha.network, NODE_HOST, name, munge, shlex.split(line))
    ha.cluster.spawn(cmd, f"slurmd-{name}.out")
    return name


def submit(ha: HaCluster, label: str) -> int:
    """A batch job that runs until the test creates its release file (at most 5 minutes)."""
    release = ha.root / "jobs" / f"{label}.release"
    wait = f"i=0; while [ ! -e {release} ] && [ $i -lt 600 ]; do sleep 0.5; i=$((i+1)); done"
    script = f"echo started {label}; {wait}; echo finished {label}"
    out = ha.client(
        "sbatch", "--parsable", "-p", "batch", "-N1", "-t", "10", "-J", label,
        f"--chdir={ha.root / 'jobs'}", f"--output={ha.root / 'jobs'}/{label}-%j.out",
        "--wrap", script,
    ).stdout  # fmt: skip
    return int(out.strip().split(";")[0])


def release(ha: HaCluster, label: str) -> None:
    (ha.root / "jobs" / f"{label}.release").touch()


def job_state(ha: HaCluster, job: int) -> str:
    out = ha.client("scontrol", "show", "job", "-o", str(job), check=False).stdout
    found = re.search(r"\bJobState=(\S+)", out)
    return found.group(1) if found else ""


def job_is(ha: HaCluster, job: int, state: str) -> Callable[[], bool]:
    return lambda: job_state(ha, job) == state


def node_state(ha: HaCluster, name: str) -> str:
    out = ha.client("scontrol", "show", "node", "-o", name, check=False).stdout
    found = re.search(r"\bState=(\S+)", out)
    return found.group(1) if found else ""


def both_up(ha: HaCluster) -> bool:
    ping = ha.client("scontrol", "ping", check=False).stdout
    roles = {"primary": PRIMARY, "backup": BACKUP}
    return all(f"Slurmctld({role}) at {c} is UP" in ping for role, c in roles.items())


@pytest.fixture
def ha(cluster: Cluster) -> Iterator[HaCluster]:
    network = make_network(ADDRESSES)
    try:
        ha = HaCluster(cluster, network)
        user = ensure_slurm_user()
        for controller in (PRIMARY, BACKUP):
            ha.host_dir(controller).mkdir()
            os.chown(ha.host_dir(controller), user.pw_uid, user.pw_gid)
        (ha.root / "ctld").mkdir()  # where each controller host mounts its own directory
        (ha.root / "jobs").mkdir()
        yield ha
    finally:
        cluster.stop()  # the daemons first: they live in the namespaces
        network.close()


def test_backup_takes_over_from_a_killed_primary_and_hands_control_back(
    ha: HaCluster, record_property: Callable[[str, object], None]
) -> None:
    write_ha_config(ha)
    ha.cluster.start_munged()

    # 1. Primary in control, backup in standby, one dynamic node registered.
    ha.start_controller(PRIMARY)
    poll(ha, lambda: ha.in_control(PRIMARY).returncode == 0, "the primary in control", 90)
    ha.start_controller(BACKUP)
    name = start_node(ha)
    poll(ha, lambda: node_state(ha, name).startswith("IDLE"), f"{name} idle", 90)
    poll(ha, lambda: both_up(ha), "scontrol ping: both UP", 60)
    standby = ha.in_control(BACKUP)
    assert standby.returncode != 0 and STANDBY in standby.stderr, standby
    # The agents agree: the head's runs the once-per-cluster loops, the backup's does not.
    assert acting(ha) == [PRIMARY], gate(ha, PRIMARY)
    assert "the head acts" in (gate(ha, BACKUP) or "")

    # 2. The primary is killed while a job runs; the backup takes control.
    first = submit(ha, "first")
    poll(ha, job_is(ha, first, "RUNNING"), f"job {first} running", 60)
    time.sleep(STATE_SAVE_WAIT)
    ha.kill_controller(PRIMARY)
    limit = SLURMCTLD_TIMEOUT + SLURMCTLD_TIMEOUT / 3 + STARTUP_SLACK
    takeover = poll(ha, lambda: ha.in_control(BACKUP).returncode == 0, "backup in control", limit)
    # The backup waited for SlurmctldTimeout, less what had passed since the primary's last
    # heartbeat write (every SlurmctldTimeout/4 s, heartbeat.c) when it was killed.
    assert takeover >= SLURMCTLD_TIMEOUT * 3 / 4 - 1, takeover
    assert f"ControlMachine {PRIMARY} not responding" in ha.controller_log(BACKUP)
    ping = ha.client("scontrol", "ping", check=False).stdout
    assert f"Slurmctld(primary) at {PRIMARY} is DOWN" in ping, ping
    assert f"Slurmctld(backup) at {BACKUP} is UP" in ping, ping
    assert job_state(ha, first) == "RUNNING", ha.logs()  # slurmd kept it; the backup knows it
    # The backup in control writes the heartbeat now (within a quarter of the timeout): its
    # agent takes over the loops, and the head's (were it still up) would stand by.
    poll(ha, lambda: acting(ha) == [BACKUP], "the backup's agent acting", SLURMCTLD_TIMEOUT)
    second = submit(ha, "second")
    poll(ha, job_is(ha, second, "RUNNING"), f"job {second} running", 60)
    release(ha, "first")  # it ends under the backup, which records the completion
    poll(ha, job_is(ha, first, "COMPLETED"), f"job {first} completed", 60)

    # 3. The head returns, as its rendered slurmctld unit starts it: first the agent's handback
    # (ExecStartPre) has the backup in control save Slurm's state and stop, at once (no wait
    # for a save: the job started under the backup a moment ago must survive); then the head's
    # slurmctld starts, finds no backup to ask, and reads all of it; then the backup's
    # slurmctld starts again (systemd's Restart=always, started here) and stands by.
    assert ha.controllers[BACKUP].poll() is None
    start = time.monotonic()
    done = handback.handback(agent_context(ha, PRIMARY))
    assert done.startswith("the backup stopped after"), done
    ha.controllers.pop(BACKUP).wait(timeout=30)  # it exited by itself
    ha.start_controller(PRIMARY)
    limit = CONTROL_TIMEOUT + STARTUP_SLACK
    poll(ha, lambda: ha.in_control(PRIMARY).returncode == 0, "primary back", limit)
    handback_seconds = time.monotonic() - start
    assert RELINQUISH_TIMED_OUT not in ha.controller_log(BACKUP)
    assert "REQUEST_CONTROL" not in ha.controller_log(BACKUP)
    # Nothing lost: the job that ended under the backup, and the one it started.
    assert job_state(ha, first) == "COMPLETED", ha.logs()
    assert job_state(ha, second) == "RUNNING", ha.logs()
    ha.start_controller(BACKUP)
    poll(ha, lambda: acting(ha) == [PRIMARY], "the head's agent acting again", SLURMCTLD_TIMEOUT)
    poll(ha, lambda: both_up(ha), "scontrol ping: both UP", 60)
    third = submit(ha, "third")
    # Job ids continue through both controllers: each read the other's saved state.
    assert first < second < third
    release(ha, "second")
    release(ha, "third")
    for label, job in (("first", first), ("second", second), ("third", third)):
        poll(ha, job_is(ha, job, "COMPLETED"), f"job {job} completed", 60)
        text = (ha.root / "jobs" / f"{label}-{job}.out").read_text()
        assert text.split() == ["started", label, "finished", label], text

    record_property("takeover_seconds", round(takeover, 1))
    record_property("handback_seconds", round(handback_seconds, 1))
    print(f"takeover {takeover:.1f} s, handback {handback_seconds:.1f} s", end="")
    print(f" (SlurmctldTimeout={SLURMCTLD_TIMEOUT}, {version_under_test()})")
