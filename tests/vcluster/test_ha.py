"""The head node is no longer a single point of failure (issue 29), on the virtual cluster
(definitions/ha.yaml: a head, a backup controller, two CPU nodes; a cluster of its own).

What is real: both controllers boot the head's document, `params` tells the backup it is the
backup by its address, both mount the one state directory (stand-in "state-volume": the EFS
both mount on AWS), and Slurm does the rest: the rendered SlurmctldHost pair, the workers'
slurmd with both controllers in --conf-server, the backup's takeover once the head is silent
for SlurmctldTimeout (stand-in "controller-timeout": 10 s here, 60 s rendered), the handback
when the head's slurmctld returns. The head's repair controller runs on both controllers, as
their timers run it, and the node agent's gate (slurmstack.node.active, reading the heartbeat
the controller in control writes) lets exactly one act.

Each scenario starts with the head in control and both nodes idle, and whatever way it ends,
the next one does too (`head_in_control_after`): one failure does not fail the rest.

What a user sees during a takeover (docs/head-failure.md, "During a takeover"): Slurm's client
waits while the only controller answering is a backup in standby (up to 1.5 x SlurmctldTimeout,
slurm_protocol_api.c), and a command that reaches the backup just as it switches can be
refused ("Connection reset by peer": the backup closes its standby listener). sbatch does not
retry that (sbatch.c retries only a full queue or busy nodes): the user runs it again. The
scenarios' submissions during a takeover do the same, and print how many tries they took.
"""

from __future__ import annotations

import json
import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmstack import imds_firewall
from slurmstack.contract import (
    HEARTBEAT_PATH,
    NODE_ENV_PATH,
    POWER_LOG_PATH,
    backup_host,
    elastic_node_name,
)
from slurmstack.node import active
from vcluster.conftest import require_host
from vcluster.harness import VirtualCluster, wait_until
from vcluster.harness.elastic import ElasticNodes, prepare_head
from vcluster.harness.node import Node
from vcluster.harness.standins import BACKUP_SLURMCTLD_TIMEOUT
from vcluster.test_metadata_firewall import rejected_packets, token_request

pytestmark = [pytest.mark.vcluster, pytest.mark.ha]

DEFINITION = Path(__file__).resolve().parent / "definitions" / "ha.yaml"
SLURMCTLD_PID = "/run/vcluster-units/slurmctld.service.pid"  # the systemctl stand-in's
# The backup takes control SlurmctldTimeout after the head's last sign of life, at its next
# ping (every third of it); the slack is a busy 2-core machine's.
TAKEOVER_SECONDS = BACKUP_SLURMCTLD_TIMEOUT * 4 / 3 + 30
# A returning head has the backup save Slurm's state and stop first (the rendered slurmctld
# drop-in's ExecStartPre, slurmstack.node.boot.handback): seconds; the slack is the machine's.
HANDBACK_SECONDS = 60
# slurmctld saves its state at most every 5 s (state_save.c): what changed later than that
# before the head dies is not in the shared state. The scenarios wait one save.
STATE_SAVE_SECONDS = 7
JOB_SECONDS = 90
# A job's record reaches sacct seconds after the job ends; on 26.05, after a takeover from a dead
# head, only once the controller's pass has found the accounting agent stalled for 30 s and
# restarted it (slurmstack.node.controller.dbd_agent).
ACCOUNTED_SECONDS = 150
# From the resume to the job's end on the new node (its boot here is seconds).
ELASTIC_JOB_SECONDS = 180


@pytest.fixture(scope="module")
def ha() -> Iterator[VirtualCluster]:
    require_host()
    with VirtualCluster(DEFINITION, keep=os.environ.get("VCLUSTER_KEEP") == "1") as cluster:
        assert cluster.backup is not None
        yield cluster
        print(f"\nha virtual cluster timings (s): {cluster.timings}")
    assert cluster.leftovers() == [], "the ha cluster's cleanup left these behind"


@pytest.fixture(autouse=True)
def head_in_control_after(ha: VirtualCluster) -> Iterator[None]:
    """Whatever a scenario left (a dead slurmctld, a dead head, jobs), the next starts with the
    head in control, no job, and every node registered."""
    yield
    head = ha.head
    assert head is not None
    if not head.alive:
        ha.replace_head()
    elif head.run("systemctl", "is-active", "slurmctld", check=False).returncode != 0:
        head.run("systemctl", "start", "slurmctld")
    wait_control(ha, 0, HANDBACK_SECONDS + TAKEOVER_SECONDS, "the head in control after a scenario")
    backup_started_again(ha)
    ha.client.run("scancel", "--full", "--user=root", check=False)
    ha.wait_registered()


def heartbeat(cluster: VirtualCluster) -> tuple[float, int] | None:
    """(age in seconds, index) of the heartbeat in the shared state: who is in control."""
    path = cluster.directory / "state-volume" / HEARTBEAT_PATH.removeprefix("/var/spool/slurmctld/")
    try:
        # The format the node agent's gate reads (slurmstack.node.active), not a second copy.
        written, index = active.HEARTBEAT.unpack_from(path.read_bytes())
    except (OSError, struct.error):
        return None
    return time.time() - written, index


def in_control(cluster: VirtualCluster, index: int) -> bool:
    beat = heartbeat(cluster)
    return beat is not None and beat[1] == index and beat[0] <= BACKUP_SLURMCTLD_TIMEOUT


def backup_started_again(cluster: VirtualCluster) -> None:
    """The backup's slurmctld started again once the head is in control, as systemd does it
    (the rendered drop-in's Restart=always, RestartSec; the stand-in systemctl has no Restart=):
    the head's handback stopped it. It stands by."""
    backup = cluster.backup
    assert backup is not None
    if backup.alive and backup.run("systemctl", "is-active", "slurmctld", check=False).returncode:
        backup.run("systemctl", "start", "slurmctld")


def controllers(cluster: VirtualCluster) -> dict[str, Node]:
    assert cluster.head is not None and cluster.backup is not None
    return {"head": cluster.head, "backup": cluster.backup}


def control_passes(cluster: VirtualCluster) -> dict[str, dict | None]:
    """One pass of the repair controller on each live controller, as its timer runs it: its
    JSON where it acted, None where the gate kept it from running."""
    out: dict[str, dict | None] = {}
    for which, node in controllers(cluster).items():
        if not node.alive:
            continue
        ran = node.run("slurmstack-node", "control", timeout=120)
        out[which] = json.loads(ran.stdout) if ran.stdout.strip() else None
        if out[which] is None:
            assert "control: not run here" in ran.stderr, ran.stderr
    return out


def acting(cluster: VirtualCluster) -> list[str]:
    return sorted(w for w, result in control_passes(cluster).items() if result is not None)


def submit(cluster: VirtualCluster, *args: str) -> str:
    out = cluster.client.run("sbatch", "--parsable", "--chdir=/tmp", "--output=/dev/null", *args,
                             timeout=180)  # fmt: skip
    return out.stdout.strip().split(";")[0]


# What a submission sent during a takeover may be told, and the user answers by sending it
# again; anything else fails the scenario.
TAKEOVER_REFUSALS = (
    "Connection reset by peer",
    "standby mode",
    "Unable to contact slurm controller",
)


def submit_during_takeover(cluster: VirtualCluster, *args: str) -> str:
    """``submit`` while the controllers switch, sent again on a takeover's refusal, as a user
    would (the module's docstring); bounded by the takeover's own time."""
    deadline, tries = time.monotonic() + TAKEOVER_SECONDS, 0
    while True:
        tries += 1
        sent = cluster.client.run("sbatch", "--parsable", "--chdir=/tmp", "--output=/dev/null",
                                  *args, timeout=180, check=False)  # fmt: skip
        if sent.returncode == 0:
            print(f"\nha: a submission during the takeover took {tries} tries")
            return sent.stdout.strip().split(";")[0]
        refused = any(r in sent.stderr for r in TAKEOVER_REFUSALS)
        assert refused and time.monotonic() < deadline, (tries, sent.stderr)
        time.sleep(1)


def job_state(cluster: VirtualCluster, job: str) -> str:
    out = cluster.client.run("scontrol", "show", "job", "-o", job, check=False).stdout
    fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
    return fields.get("JobState", "")


def wait_job(cluster: VirtualCluster, job: str, state: str, timeout: float = JOB_SECONDS) -> None:
    try:
        wait_until(lambda: job_state(cluster, job) == state, f"job {job} {state}", timeout)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{cluster.logs()[-20000:]}") from None


def accounted(cluster: VirtualCluster, *jobs: str) -> None:
    """sacct (from the controllers' slurmdbd, on the external database both use) has every
    job of ``jobs`` COMPLETED; a job's record reaches slurmdbd a moment after it ends."""

    def states() -> dict[str, str]:
        out = cluster.client.run("sacct", "-n", "-X", "-P", "-o", "JobID,State",
                                 "-j", ",".join(jobs), check=False).stdout  # fmt: skip
        return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)

    def done() -> bool:
        if states() == dict.fromkeys(jobs, "COMPLETED"):
            return True
        # As the controllers' timers run them, while the records wait.
        for which, result in control_passes(cluster).items():
            if result and "dbd_agent_restarted" in result:
                print(f"\nha: {which} restarted a stalled accounting agent: {result}")
        return False

    try:
        wait_until(done, "sacct", ACCOUNTED_SECONDS, 5)
    except TimeoutError:
        raise AssertionError(f"sacct: {states()} for {jobs}\n{cluster.logs()[-20000:]}") from None


def kill_slurmctld(node: Node) -> None:
    pid = node.run("cat", SLURMCTLD_PID).stdout.strip()
    node.run("kill", "-9", pid)


def wait_control(cluster: VirtualCluster, index: int, timeout: float, what: str) -> float:
    began = time.monotonic()
    try:
        wait_until(lambda: in_control(cluster, index), what, timeout)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{cluster.logs()[-20000:]}") from None
    return time.monotonic() - began


def node_state_saved(cluster: VirtualCluster) -> float:
    """When slurmctld last wrote its node table in the shared state."""
    return (cluster.directory / "state-volume" / "state" / "node_state").stat().st_mtime


def test_the_backup_boots_as_the_head_does(ha: VirtualCluster) -> None:
    """The backup runs the head's document: the metadata firewall (root and SlurmUser reach
    the metadata service, job users do not), munge with the cluster's key (a credential made on
    the backup decodes on the head), and the agent, which knows it is the backup."""
    head, backup = ha.head, ha.backup
    assert head is not None and backup is not None
    assert backup.run("systemctl", "is-active", imds_firewall.UNIT_NAME).stdout.strip() == "active"
    refused_before = rejected_packets(backup)
    for user in ("root", "slurm"):
        assert token_request(backup, user) == (0, "200"), user
    code, answer = token_request(backup, "nobody")
    assert code == 1 and answer.startswith("refused:"), answer
    assert rejected_packets(backup) == refused_before + 1
    credential = backup.run("munge", "-n").stdout
    assert head.run("unmunge", input=credential).returncode == 0
    env = backup.run("cat", NODE_ENV_PATH).stdout
    assert f"SLURMSTACK_NODE_NAME={backup_host(ha.plan.name)}" in env, env


def test_nodes_that_just_registered_are_saved_for_the_backup(ha: VirtualCluster) -> None:
    """First, on the fresh cluster: its nodes registered after slurmctld last saved its node
    table, and a registration schedules no save (slurmstack.node.controller.registrations).
    The head's repair pass asks for one; after a takeover the backup knows every node."""
    head = ha.head
    assert head is not None and in_control(ha, 0)
    names = {ha.slurm_name(n) for n in ha.workers.values()}
    passes = control_passes(ha)
    assert passes["backup"] is None and passes["head"] is not None
    assert set(passes["head"].get("saved_registrations", [])) == names, passes["head"]
    time.sleep(STATE_SAVE_SECONDS)
    assert control_passes(ha)["head"].get("saved_registrations") is None  # saved: no more
    kill_slurmctld(head)
    wait_control(ha, 1, TAKEOVER_SECONDS, "the backup in control")
    records = ha.wait_registered()
    assert names <= set(records)
    head.run("systemctl", "start", "slurmctld")
    wait_control(ha, 0, HANDBACK_SECONDS, "the head in control again")
    backup_started_again(ha)
    ha.wait_registered()


def test_the_backup_takes_over_from_a_dead_slurmctld_and_hands_control_back(
    ha: VirtualCluster,
) -> None:
    head, backup = ha.head, ha.backup
    assert head is not None and backup is not None
    assert head.run("hostname").stdout.strip() == f"{ha.plan.name}-head"
    assert backup.run("hostname").stdout.strip() == f"{ha.plan.name}-backup"
    assert in_control(ha, 0) and acting(ha) == ["head"]
    # A two-node job runs through the takeover.
    long = submit(ha, "-p", "cpu", "-N2", "-t", "5", "--wrap", "srun -N2 sleep 45")
    wait_job(ha, long, "RUNNING")
    time.sleep(STATE_SAVE_SECONDS)
    kill_slurmctld(head)
    killed = time.monotonic()
    # Submitted while no controller answers: the client waits for the backup.
    during = submit_during_takeover(ha, "-p", "cpu", "-N1", "-t", "5", "--wrap", "true")
    wait_control(ha, 1, TAKEOVER_SECONDS, "the backup in control")
    took = time.monotonic() - killed
    assert job_state(ha, long) == "RUNNING"
    # The head instance is up (only its slurmctld died): its agent stands by.
    assert acting(ha) == ["backup"]
    wait_job(ha, long, "COMPLETED")
    wait_job(ha, during, "COMPLETED")
    # The head's slurmctld returns and takes control back, a moment after the backup started a
    # job (no wait for a state save): the handback (the unit's ExecStartPre) has the backup
    # save its state and stop, and the head reads all of it.
    running = submit(ha, "-p", "cpu", "-N1", "-t", "5", "--wrap", "sleep 20")
    wait_job(ha, running, "RUNNING")
    returned = time.monotonic()
    head.run("systemctl", "start", "slurmctld")
    assert backup.run("systemctl", "is-active", "slurmctld", check=False).returncode != 0
    wait_control(ha, 0, HANDBACK_SECONDS, "the head in control again")
    handed = time.monotonic() - returned
    assert job_state(ha, running) == "RUNNING"
    backup_started_again(ha)
    assert acting(ha) == ["head"]
    after = submit(ha, "-p", "cpu", "-N2", "-t", "5", "--wrap", "srun -N2 true")
    wait_job(ha, after, "COMPLETED")
    wait_job(ha, running, "COMPLETED")
    assert int(long) < int(during) < int(running) < int(after)
    accounted(ha, long, during, running, after)
    ha.wait_registered()
    print(f"\nha: takeover {took:.1f} s after the head's slurmctld died, handback {handed:.1f} s")


def test_the_backup_takes_over_from_a_dead_head_instance_and_its_replacement_takes_it_back(
    ha: VirtualCluster,
) -> None:
    """The whole head instance dies (its processes and its network); its replacement, launched
    on the head's own interface (`pulumi up --replace`), takes control back."""
    old = ha.head
    assert old is not None and in_control(ha, 0)
    long = submit(ha, "-p", "cpu", "-N2", "-t", "5", "--wrap", "srun -N2 sleep 45")
    wait_job(ha, long, "RUNNING")
    time.sleep(STATE_SAVE_SECONDS)
    ha.kill_head()
    killed = time.monotonic()
    during = submit_during_takeover(ha, "-p", "cpu", "-N1", "-t", "5", "--wrap", "true")
    wait_control(ha, 1, TAKEOVER_SECONDS, "the backup in control")
    took = time.monotonic() - killed
    assert acting(ha) == ["backup"]
    wait_job(ha, long, "COMPLETED")
    wait_job(ha, during, "COMPLETED")
    records = ha.wait_registered()  # every worker still answers the backup
    assert {ha.slurm_name(n) for n in ha.workers.values()} <= set(records)
    # The head's slurmdbd died with it: the backup's records the jobs, in the one database.
    accounted(ha, long, during)

    new = ha.replace_head()
    assert new.address == old.address and new.instance_id != old.instance_id
    wait_control(ha, 0, HANDBACK_SECONDS, "the new head in control")
    backup_started_again(ha)
    assert acting(ha) == ["head"]
    after = submit(ha, "-p", "cpu", "-N2", "-t", "5", "--wrap", "srun -N2 true")
    wait_job(ha, after, "COMPLETED")
    assert int(long) < int(during) < int(after)
    accounted(ha, long, during, after)
    print(f"\nha: takeover {took:.1f} s after the head instance died")


def test_a_node_failing_while_the_backup_is_in_control_is_replaced_once(
    ha: VirtualCluster,
) -> None:
    """The head instance stays up with its slurmctld dead: both controllers' timers run the
    repair controller's pass, and only the backup's acts: one replacement, not two. Back under
    the head, the head's finishes the repair the backup started (the controller's own state
    is in the shared state mount)."""
    head = ha.head
    assert head is not None and in_control(ha, 0)
    time.sleep(STATE_SAVE_SECONDS)
    kill_slurmctld(head)
    wait_control(ha, 1, TAKEOVER_SECONDS, "the backup in control")
    victim = ha.pool_nodes("cpu")[0]
    name = ha.slurm_name(victim)
    ha.client.run("scontrol", "update", f"nodename={name}", "state=drain", "reason=Action:Replace")
    replaced: list[dict] = []
    seen: list[dict] = []
    # Both timers' passes until one replaces (a pass that could not read AWS, on this busy
    # machine, decides nothing), then two more: one replacement in all.
    deadline, more = time.monotonic() + JOB_SECONDS, 2
    while more and time.monotonic() < deadline:
        for which, result in control_passes(ha).items():
            if result is None:
                continue
            assert which == "backup", result
            seen.append(result)
            replaced += [a for a in result["actions"] if a["action"] == "replace"]
        more -= bool(replaced)
        time.sleep(0 if replaced else 2)
    assert [a["node"] for a in replaced] == [name], seen
    group = ha.deployment.groups["cpu"]
    described = ha.aws.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[group]
    )["AutoScalingGroups"][0]
    # The replacement is asked of the group once: the victim marked Unhealthy, no other.
    health = {i["InstanceId"]: i["HealthStatus"] for i in described["Instances"]}
    assert [i for i, h in health.items() if h == "Unhealthy"] == [victim.instance_id], health

    # The head returns; its agent, alone again, completes the replacement.
    head.run("systemctl", "start", "slurmctld")
    wait_control(ha, 0, HANDBACK_SECONDS, "the head in control again")
    backup_started_again(ha)
    ha.settle_groups()
    completed = []
    deadline = time.monotonic() + JOB_SECONDS
    while not completed and time.monotonic() < deadline:
        results = control_passes(ha)
        assert results.get("backup") is None, results
        result = results["head"]
        assert result is not None
        completed = [a for a in result["actions"] if a["action"] == "complete"]
        replaced += [a for a in result["actions"] if a["action"] == "replace"]
        time.sleep(2)
    assert completed and len(replaced) == 1, (completed, replaced)
    assert ha.lifecycle_completed(victim.instance_id) == "CONTINUE"
    (new,) = ha.settle_groups()
    ha.wait_registered()

    # The old record: set DOWN by a pass (its instance is gone), then reaped.
    def old_record_down() -> bool:
        control_passes(ha)
        return "DOWN" in ha.node_records().get(name, {}).get("State", "")

    wait_until(old_record_down, f"{name}'s record DOWN", timeout=JOB_SECONDS, poll=2)
    out = json.loads(head.run("slurmstack-node", "reap", "--grace", "0").stdout)
    assert name in out["deleted"], out
    assert new.role == "cpu" and ha.slurm_name(new) in ha.node_records()


def test_an_elastic_resume_asked_during_a_takeover_is_served_once(ha: VirtualCluster) -> None:
    """A job for the elastic pool is submitted while the backup takes over: the backup, once in
    control, runs ResumeProgram (the head's power programs, on the backup: its role, its
    launch templates); one instance is launched, its node fetches its configuration from the
    backup (the head's slurmctld refuses) and runs the job. Back under the head: the head
    knows the node at the instance's address, and its sweep finds no orphan to terminate."""
    head, backup = ha.head, ha.backup
    assert head is not None and backup is not None and in_control(ha, 0)
    prepare_head(ha)  # a replaced head (scenario 3) has no power environment yet
    nodes = ElasticNodes(ha)
    assert nodes.instances() == {}
    time.sleep(STATE_SAVE_SECONDS)
    kill_slurmctld(head)
    job = submit_during_takeover(ha, "-p", "burst", "-N1", "-t", "5", "--wrap", "hostname")
    wait_control(ha, 1, TAKEOVER_SECONDS, "the backup in control")

    def done() -> bool:
        nodes.sync()
        return job_state(ha, job) == "COMPLETED"

    try:
        wait_until(done, f"job {job} COMPLETED on an elastic node", ELASTIC_JOB_SECONDS)
    except TimeoutError as exc:
        power = backup.run("cat", POWER_LOG_PATH, check=False).stdout
        raise AssertionError(f"{exc}\n{power}\n{ha.logs()[-20000:]}") from None
    # Served once: one instance, launched by the backup's ResumeProgram, none by the head's.
    (instance_id,) = nodes.instances()
    assert "resume " in backup.run("cat", POWER_LOG_PATH, check=False).stdout
    assert "resume " not in head.run("cat", POWER_LOG_PATH, check=False).stdout
    name = elastic_node_name("burst", 1)
    assert nodes.named(name) is nodes.nodes[instance_id]

    head.run("systemctl", "start", "slurmctld")
    wait_control(ha, 0, HANDBACK_SECONDS, "the head in control again")
    backup_started_again(ha)
    record = ha.node_records()[name]
    assert record["NodeAddr"] == nodes.nodes[instance_id].address, record
    swept = json.loads(head.run("slurmstack-node", "power-sweep", "--dry-run").stdout)
    assert swept["terminated"] == {}, swept
    nodes.sync()
    assert list(nodes.instances()) == [instance_id]
