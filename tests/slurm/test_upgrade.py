"""A Slurm upgrade in Slurm's order on real daemons: 24.11 (Debian 13's, the older leg) to 26.05
(Debian 14's, the version of record), on one StateSaveLocation, as a slurmstack cluster takes it
(the head first, then the pools: slurmstack.stack.head_node.head_ami).

1. slurmctld and a pool's `slurmd -Z` of 24.11, with the rendered configuration of a staged
   upgrade (slurm.version 26.05.5, the pool at 24.11.5: slurm.conf written for 24.11); a job
   running, a held job queued.
2. A 26.05 slurmd cannot join the 24.11 slurmctld: nodes ahead of the controller never register
   (what the stack's order and checks.slurm.slurm_version_order keep from happening).
3. slurmctld stopped (by pid) and 26.05's started on the same state: the jobs and the node are
   still there, the 24.11 slurmd is still registered and runs a new job.
4. slurmd stopped and 26.05's started under the same name: the job started under 24.11 finishes
   (its slurmstepd outlived the slurmd), the held job runs, the node reports 26.05.

The roots come from `.ci/slurm-chroot trixie` and `.ci/slurm-chroot forky`
(SLURMSTACK_UPGRADE_FROM_ROOT, SLURMSTACK_UPGRADE_TO_ROOT); with CI=true a missing root fails.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from slurm.conftest import Cluster, make_devices, wait_for, write_config
from slurm.slurm_root import missing_commands, wrapper_dir
from slurm.test_dynamic_node import slurmd_command
from slurmstack.contract import SLURM_CONF_PATH, TASK_PROLOG_PATH, node_name, node_name_prefix
from slurmstack.plan import build_plan, oldest_slurm_version
from slurmstack.render import SLURMD_UNIT_PATH, head_files, pool_files
from support.examples import example_plan as example_plan_of_record

pytestmark = [pytest.mark.slurm, pytest.mark.upgrade]

FROM_ENV, TO_ENV = "SLURMSTACK_UPGRADE_FROM_ROOT", "SLURMSTACK_UPGRADE_TO_ROOT"
OLDER, NEWER = "24.11.5", "26.05.5"
USED = ("munged", "slurmctld", "slurmd", "scontrol", "srun", "sbatch", "unshare", "chroot")
POOL = "batch"  # cpu-hpc's pool without Exclusive: two jobs share its node


def roots() -> tuple[Path, Path]:
    found = [os.environ.get(FROM_ENV, "").strip(), os.environ.get(TO_ENV, "").strip()]
    if not all(found):
        why = f"{FROM_ENV} and {TO_ENV} name the 24.11 and 26.05 roots (.ci/slurm-chroot)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {why}")
        pytest.skip(why)
    if os.geteuid() != 0:
        pytest.skip("needs root (daemons, mount namespaces)")
    paths = (Path(found[0]), Path(found[1]))
    for root in paths:
        missing = set(missing_commands(root)) & set(USED)
        assert not missing, f"{root} lacks {sorted(missing)}: build it with .ci/slurm-chroot"
    return paths


class Versions:
    """Runs the test cluster's commands from one root or the other."""

    def __init__(self, cluster: Cluster, older: Path, newer: Path) -> None:
        self.cluster = cluster
        self.roots = {OLDER: older, NEWER: newer}

    def env(self, version: str) -> dict[str, str]:
        env = self.cluster.env()
        env["PATH"] = f"{wrapper_dir(self.roots[version])}:{os.environ['PATH']}"
        env.pop("SLURMSTACK_SLURM_BIND", None)  # the test's directory is under /tmp, shared
        return env

    def spawn(self, version: str, cmd: list[str], log: str) -> subprocess.Popen[bytes]:
        out = open(self.cluster.root / "log" / log, "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env(version))
        self.cluster.procs.append(proc)
        return proc

    def run(self, version: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            list(cmd), env=self.env(version), capture_output=True, text=True, timeout=60
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"{cmd} ({version}) -> {result.returncode}\n{result.stdout}\n{result.stderr}\n"
                + self.cluster.logs()
            )
        return result

    def slurmctld(self, version: str) -> subprocess.Popen[bytes]:
        conf = str(self.cluster.conf)
        proc = self.spawn(version, ["slurmctld", "-D", "-f", conf], f"slurmctld-{version}.out")

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"slurmctld {version} exited:\n{self.cluster.logs()}")
            return self.run(version, "scontrol", "ping", check=False).returncode == 0

        wait_for(ready, f"slurmctld {version}", self.cluster, timeout=120)
        return proc

    def slurmd(self, version: str, cmd: list[str], name: str) -> subprocess.Popen[bytes]:
        """As Cluster.start_slurmd: the test's munge socket at /run/munge in its namespace."""
        script = 'mkdir -p /run/munge && mount --bind "$0" /run/munge && exec "$@"'
        wrapped = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
        munge = str(self.cluster.munge_socket.parent)
        return self.spawn(version, [*wrapped, munge, "slurmd", *cmd[1:]], f"slurmd-{version}.out")

    def job(self, version: str, job_id: str) -> dict[str, str]:
        text = self.run(version, "scontrol", "show", "job", "-o", job_id, check=False).stdout
        return dict(f.split("=", 1) for f in text.split() if "=" in f)

    def node(self, version: str, name: str) -> dict[str, str]:
        text = self.run(version, "scontrol", "show", "node", "-o", name, check=False).stdout
        return dict(f.split("=", 1) for f in text.split() if "=" in f)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """By pid: SIGTERM, as systemd stops a unit (slurmctld saves its state)."""
    proc.terminate()
    proc.wait(timeout=60)
    assert proc.returncode == 0, f"stopped with {proc.returncode}"


def sbatch(versions: Versions, version: str, *args: str) -> str:
    out = versions.run(version, "sbatch", "--parsable", "-p", POOL, "-N1", "-n1", *args)
    return out.stdout.strip().split(";")[0]


def staged_plan():
    """cpu-hpc mid-upgrade: the head at 26.05.5, its `batch` pool still at 24.11.5."""
    spec = example_plan_of_record("cpu-hpc").spec
    pools = [
        p.model_copy(update={"slurm_version": OLDER}) if p.name == POOL else p for p in spec.pools
    ]
    slurm = spec.slurm.model_copy(update={"version": NEWER})
    return build_plan(spec.model_copy(update={"slurm": slurm, "pools": pools}))


def test_controller_then_nodes_from_24_11_to_26_05(cluster: Cluster) -> None:
    older, newer = roots()
    versions = Versions(cluster, older, newer)
    plan = staged_plan()
    # slurm.conf is written for the oldest release a daemon runs: 24.11's slurmd reads it.
    assert oldest_slurm_version(plan.spec) == OLDER
    pool = plan.pool(POOL)
    files = pool_files(plan, pool)
    # Debian's 26.05 has no mpi/pmix plugin (slurm_root.has_plugin): none, for both releases.
    write_config(cluster, head_files(plan), files[TASK_PROLOG_PATH], {"MpiDefault": "none"})
    if pool.gpu is not None:
        make_devices(cluster, "nvidia", pool.gpu.count)
    cluster.start_munged()
    name = node_name(node_name_prefix(pool.name), "10.42.7.19")
    cmd = slurmd_command(files[SLURMD_UNIT_PATH], cluster, name)

    # 1. Everything at 24.11: a job running, one held.
    ctld = versions.slurmctld(OLDER)
    slurmd = versions.slurmd(OLDER, cmd, name)
    wait_for(
        lambda: versions.node(OLDER, name).get("State", "").startswith("IDLE"),
        f"{name} idle on 24.11",
        cluster,
        timeout=120,
    )
    release = cluster.root / "release"
    done = cluster.root / "done-running"
    # Runs until the test releases it (at most 10 min): it must outlive both upgrades.
    script = (
        f"for i in $(seq 600); do [ -e {release} ] && break; sleep 1; done; "
        f"test -e {release} && echo finished > {done}"
    )
    running = sbatch(versions, OLDER, "-t", "15", "--wrap", script)
    held = sbatch(versions, OLDER, "--hold", "-t", "5", "--wrap", "true")
    wait_for(
        lambda: versions.job(OLDER, running).get("JobState") == "RUNNING",
        "the long job running",
        cluster,
        timeout=120,
    )

    # 2. A node ahead of its controller: 26.05's slurmd never joins 24.11's slurmctld.
    ahead = node_name(node_name_prefix(pool.name), "10.42.7.20")
    ahead_cmd = slurmd_command(files[SLURMD_UNIT_PATH], cluster, ahead)
    ahead_proc = versions.slurmd(NEWER, ahead_cmd, ahead)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and ahead_proc.poll() is None:
        assert not versions.node(OLDER, ahead).get("State", "").startswith("IDLE"), (
            "a 26.05 slurmd registered with a 24.11 slurmctld"
        )
        time.sleep(2)
    assert not versions.node(OLDER, ahead).get("State", "").startswith("IDLE")
    if ahead_proc.poll() is None:
        ahead_proc.terminate()
        ahead_proc.wait(timeout=30)

    # 3. The controller upgraded on the same StateSaveLocation; the 24.11 slurmd stays.
    stop(ctld)
    ctld = versions.slurmctld(NEWER)
    assert versions.run(NEWER, "scontrol", "version").stdout.split()[-1] == NEWER
    assert versions.job(NEWER, running)["JobState"] == "RUNNING"
    assert versions.job(NEWER, held)["JobState"] == "PENDING"
    assert versions.job(NEWER, held)["Reason"] == "JobHeldUser"
    # Saved state says MIXED at once; the slurmd's own registration says its release.
    wait_for(
        lambda: (
            versions.node(NEWER, name).get("Version") == OLDER
            and versions.node(NEWER, name).get("State", "").startswith("MIXED")
        ),
        f"{name} (24.11) registered with 26.05's slurmctld",
        cluster,
        timeout=180,
    )
    assert slurmd.poll() is None
    # The older slurmd runs a job the newer controller schedules.
    out = versions.run(NEWER, "srun", "-p", POOL, "-N1", "-n1", "-t", "1", "hostname")
    assert out.stdout.strip()

    # 4. The node upgraded: same name, same spool; the 24.11 job's slurmstepd outlives it.
    stop(slurmd)
    slurmd = versions.slurmd(NEWER, cmd, name)
    wait_for(
        lambda: (
            versions.node(NEWER, name).get("Version") == NEWER
            and versions.node(NEWER, name).get("State", "").startswith("MIXED")
        ),
        f"{name} back at 26.05 with its job",
        cluster,
        timeout=120,
    )
    assert versions.job(NEWER, running)["JobState"] == "RUNNING"
    release.touch()
    wait_for(
        lambda: versions.job(NEWER, running).get("JobState") == "COMPLETED",
        "the job started under 24.11 completed",
        cluster,
        timeout=120,
    )
    assert versions.job(NEWER, running)["ExitCode"] == "0:0"
    assert done.read_text().strip() == "finished"
    versions.run(NEWER, "scontrol", "release", held)
    wait_for(
        lambda: versions.job(NEWER, held).get("JobState") == "COMPLETED",
        "the held job ran on 26.05",
        cluster,
        timeout=120,
    )
    assert "DOWN" not in versions.node(NEWER, name)["State"]


def upgraded_plan(upgrade_from: str | None = None):
    """cpu-hpc after the staged upgrade's second step: every daemon at 26.05.5 (slurm.conf
    written for ``upgrade_from`` when given: slurm.upgrade_from)."""
    spec = example_plan_of_record("cpu-hpc").spec
    pools = [p.model_copy(update={"slurm_version": None}) for p in spec.pools]
    slurm = spec.slurm.model_copy(update={"version": NEWER, "upgrade_from": upgrade_from})
    return build_plan(spec.model_copy(update={"slurm": slurm, "pools": pools}))


def test_a_24_11_slurmd_not_yet_refreshed_reads_the_conf_of_upgrade_from_and_stops_at_26_05s(
    cluster: Cluster,
) -> None:
    """The head at 26.05 with a 24.11 node, as after the first step; then the second step
    (the pool to 26.05) reaches the node at a reconfigure, before its instance is refreshed.
    With slurm.upgrade_from 24.11.5, slurm.conf is still 24.11's: the slurmd stays and runs
    jobs. Without it (what `plan --against` warns of: slurmstack.change.releases), slurm.conf
    has what only 26.05 reads (HealthCheckTimeout, MetricsType, ...): the slurmd stops."""
    older, newer = roots()
    versions = Versions(cluster, older, newer)
    plan = staged_plan()
    pool = plan.pool(POOL)
    files = pool_files(plan, pool)
    prolog = files[TASK_PROLOG_PATH]
    write_config(cluster, head_files(plan), prolog, {"MpiDefault": "none"})
    cluster.start_munged()
    name = node_name(node_name_prefix(pool.name), "10.42.7.19")
    versions.slurmctld(NEWER)
    slurmd = versions.slurmd(OLDER, slurmd_command(files[SLURMD_UNIT_PATH], cluster, name), name)
    wait_for(
        lambda: versions.node(NEWER, name).get("State", "").startswith("IDLE"),
        f"{name} (24.11) idle under 26.05's slurmctld",
        cluster,
        timeout=120,
    )
    kept = head_files(upgraded_plan(upgrade_from=OLDER))
    assert "HealthCheckTimeout=" not in kept[SLURM_CONF_PATH]
    assert "MetricsType=" not in kept[SLURM_CONF_PATH]
    write_config(cluster, kept, prolog, {"MpiDefault": "none"})
    versions.run(NEWER, "scontrol", "reconfigure")
    time.sleep(5)  # what a slurmd that stops does within a second or two
    assert slurmd.poll() is None, cluster.logs()
    out = versions.run(NEWER, "srun", "-p", POOL, "-N1", "-n1", "-t", "1", "hostname")
    assert out.stdout.strip()
    assert versions.node(NEWER, name)["Version"] == OLDER
    # upgrade_from left out while the node still runs 24.11.
    upgraded = head_files(upgraded_plan())
    assert "HealthCheckTimeout=" in upgraded[SLURM_CONF_PATH]  # what 24.11 does not know
    write_config(cluster, upgraded, prolog, {"MpiDefault": "none"})
    versions.run(NEWER, "scontrol", "reconfigure")
    wait_for(lambda: slurmd.poll() is not None, "the 24.11 slurmd to stop", cluster, timeout=90)
    log = (cluster.root / "log" / f"slurmd-{OLDER}.out").read_text()
    assert "Parsing error at unrecognized key: HealthCheckTimeout" in log, log[-3000:]
    assert "fatal: Unable to process configuration file" in log
