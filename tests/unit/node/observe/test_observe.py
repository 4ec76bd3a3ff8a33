"""The observe room: metrics in Prometheus's text format, nodes by state and reason, running
jobs' labels, Slurm's own names for a Slurm without its endpoint, the scrape targets that follow
the nodes, the GPU-to-job files, and the alert relay against moto's SNS and EventBridge."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from slurmstack.contract import (
    ALERT_EVENT_DETAIL_TYPE,
    ALERT_EVENT_SOURCE,
    BOOTSTRAP_ENV_PATH,
    GPU_JOB_DIR,
    NODE_CONFIG_PATH,
    BootstrapEnv,
    DeployParameter,
    bootstrap_env_text,
    dump_document,
)
from slurmstack.node.context import Context
from slurmstack.node.metrics_file import exposition
from slurmstack.node.observe import gpu_jobs, relay, slurm_metrics, targets
from slurmstack.node.observe.node_metrics import efa_samples
from slurmstack.node.slurm import NodeRecord, parse_job_line
from slurmstack.plan.observability import observability_plan
from slurmstack.render.node import node_config
from support.examples import example_plan

PLAN = example_plan("p5-training")
HEAD = node_config(PLAN, None)
MONITORING = observability_plan(PLAN).monitoring


def record(name: str, address: str, state: str, reason: str = "", **fields: str) -> NodeRecord:
    values = {"NodeName": name, "NodeAddr": address, "State": state, **fields}
    if reason:
        values.update(Reason=reason, ReasonUser="root", ReasonTime="2025-06-15T15:00:00")
    return NodeRecord.of(values)


NODES = [
    record("train-10-42-0-5", "10.42.0.5", "ALLOCATED", CfgTRES="cpu=192,gres/gpu=8",
           AllocTRES="cpu=8,gres/gpu=8", CPUTot="192", CPUAlloc="8"),
    record("train-10-42-0-6", "10.42.0.6", "IDLE+DRAIN",
           "slurmstack:gpu-xid: 79 GPU has fallen off the bus.", CfgTRES="cpu=192,gres/gpu=8"),
    record("dev-10-42-0-7", "10.42.0.7", "IDLE+DRAIN", "maintenance"),
    record("dev-e3", "dev-e3", "IDLE+CLOUD+POWERED_DOWN"),
]  # fmt: skip


def test_the_exposition_is_prometheus_text_format() -> None:
    text = exposition(
        [
            ("slurmstack_a", {"x": 'say "hi"\n'}, 1.0),
            ("slurmstack_b_total", {}, 2.5),
            ("slurmstack_a", {"x": "y"}, 0.0),
        ]
    )
    assert text == (
        "# TYPE slurmstack_a gauge\n"
        'slurmstack_a{x="say \\"hi\\"\\n"} 1\n'
        'slurmstack_a{x="y"} 0\n'
        "# TYPE slurmstack_b_total counter\n"
        "slurmstack_b_total 2.5\n"
    )


def test_nodes_by_state_and_reason_name_the_check_and_the_remedy() -> None:
    samples = slurm_metrics.node_samples(HEAD, NODES)
    drained = {s[1]["node"]: s[1] for s in samples if s[0] == "slurmstack_node_drained"}
    assert drained["train-10-42-0-6"] == {
        "node": "train-10-42-0-6", "pool": "train", "check": "gpu-xid", "remedy": "replace"
    }  # fmt: skip
    assert drained["dev-10-42-0-7"]["check"] == "operator"
    assert "train-10-42-0-5" not in drained
    states = {s[1]["node"]: s[1]["state"] for s in samples if s[0] == "slurmstack_node_state"}
    assert states["train-10-42-0-5"] == "allocated" and states["dev-e3"] == "idle"


def test_slurms_own_names_count_what_the_records_say() -> None:
    samples = {
        (s[0], tuple(sorted(s[1].items()))): s[2] for s in slurm_metrics.native_node_samples(NODES)
    }
    assert samples[("slurm_nodes", ())] == 4
    assert samples[("slurm_nodes_drain", ())] == 2
    assert samples[("slurm_nodes_powered_down", ())] == 1
    assert samples[("slurm_node_gpus_alloc", (("node", "train-10-42-0-5"),))] == 8
    assert samples[("slurm_node_gpus", (("node", "train-10-42-0-6"),))] == 8


def test_gpus_are_counted_from_the_gres_where_no_tres_counts_them() -> None:
    """Without slurmdbd Slurm may not track gres/gpu as a TRES (slurmctld refuses
    AccountingStorageTRES=gres/gpu then): CfgTRES and AllocTRES carry no GPUs, and the GRES
    lists (scontrol --details) say what the node has and its jobs hold."""
    nodes = [
        record("dev-10-42-0-7", "10.42.0.7", "MIXED", CfgTRES="cpu=48,mem=373556M,billing=48",
               AllocTRES="cpu=2,mem=15564M", Gres="gpu:l40s:4(S:0-1)",
               GresUsed="gpu:l40s:2(IDX:0-1)"),
        record("dev-10-42-0-8", "10.42.0.8", "IDLE", CfgTRES="cpu=48", Gres="gpu:4",
               GresUsed="gpu:0(IDX:N/A)"),
    ]  # fmt: skip
    samples = {(s[0], s[1].get("node", "")): s[2] for s in slurm_metrics.native_node_samples(nodes)}
    assert samples[("slurm_node_gpus", "dev-10-42-0-7")] == 4
    assert samples[("slurm_node_gpus_alloc", "dev-10-42-0-7")] == 2
    assert samples[("slurm_node_gpus", "dev-10-42-0-8")] == 4
    assert samples[("slurm_node_gpus_alloc", "dev-10-42-0-8")] == 0
    # slurmstack's own count, whatever the release (Slurm 25.11+'s own endpoint counts TRES).
    own = {s[1]["node"]: s[2] for s in slurm_metrics.node_samples(HEAD, nodes)
           if s[0] == "slurmstack_node_gpus"}  # fmt: skip
    assert own == {"dev-10-42-0-7": 4, "dev-10-42-0-8": 4}
    job = {"JobId": "7", "JobState": "RUNNING", "AllocTRES": "cpu=2,mem=15564M",
           "JOB_GRES": "gpu:l40s:2"}  # fmt: skip
    assert slurm_metrics.job_gpus(job) == 2
    # As scontrol --details --oneliner prints a running job (Slurm 22.05, no accounting).
    line = ("JobId=7 JobName=wrap UserId=ana(1001) GroupId=ana(1001) Account=(null) "
            "JobState=RUNNING Reason=None Dependency=(null) Partition=gpu "
            "AllocNode:Sid=ip-10-42-0-2:1402 ReqNodeList=(null) NodeList=dev-10-42-0-7 "
            "TRES=cpu=2,mem=15564M,node=1,billing=2 WorkDir=/tmp Nodes=dev-10-42-0-7 CPU_IDs=0-1 "
            "Mem=15564 GRES=gpu:l40s:2(IDX:0-1) JOB_GRES=gpu:l40s:2")  # fmt: skip
    parsed = parse_job_line(line)
    assert (parsed["Partition"], parsed["JOB_GRES"]) == ("gpu", "gpu:l40s:2")
    assert ("slurm_partition_jobs_running", {"partition": "gpu"}, 1.0) in (
        slurm_metrics.native_job_samples([parsed])
    )
    assert ("slurmstack_job_gpus", {"hpc_job": "7"}, 2.0) in slurm_metrics.job_samples([parsed])
    # A TRES list that counts GPUs wins over the GRES list.
    assert slurm_metrics.gpus_of("cpu=8,gres/gpu=8", "gpu:h100:4") == 8


def test_a_running_job_has_its_account_user_and_gpus() -> None:
    jobs = [
        {"JobId": "41", "JobState": "RUNNING", "Account": "vision", "UserId": "ana(1001)",
         "Partition": "train", "AllocTRES": "cpu=16,mem=64G,node=2,gres/gpu=16"},
        {"JobId": "42", "JobState": "PENDING", "Account": "nlp", "UserId": "bo(1002)",
         "Partition": "train", "TRES": "cpu=1,node=1"},
    ]  # fmt: skip
    samples = slurm_metrics.job_samples(jobs)
    assert samples == [
        ("slurmstack_job_info",
         {"hpc_job": "41", "account": "vision", "user": "ana", "partition": "train"}, 1.0),
        ("slurmstack_job_gpus", {"hpc_job": "41"}, 16.0),
    ]  # fmt: skip
    native = {s[0]: s[2] for s in slurm_metrics.native_job_samples(jobs) if not s[1]}
    assert native == {"slurm_jobs": 2, "slurm_jobs_running": 1, "slurm_jobs_pending": 1,
                      "slurm_jobs_gpus_alloc": 16}  # fmt: skip


def test_targets_follow_the_nodes_that_have_an_instance(tmp_path: Path) -> None:
    ctx = Context(root=tmp_path)
    counts = targets.write_targets(ctx, HEAD, MONITORING, NODES)
    nodes = json.loads(ctx.path(targets.NODES_FILE).read_text())
    assert [g["labels"]["node"] for g in nodes] == [
        "dev-10-42-0-7",
        "train-10-42-0-5",
        "train-10-42-0-6",
    ]
    assert nodes[1] == {
        "targets": ["10.42.0.5:9100"],
        "labels": {"node": "train-10-42-0-5", "pool": "train"},
    }
    gpus = json.loads(ctx.path(targets.GPUS_FILE).read_text())
    assert {g["targets"][0] for g in gpus} == {"10.42.0.5:9400", "10.42.0.6:9400", "10.42.0.7:9400"}
    assert counts == {targets.NODES_FILE: 3, targets.GPUS_FILE: 3}
    # An elastic node that powered up appears; an unchanged file is not rewritten.
    stamp = ctx.path(targets.GPUS_FILE).stat().st_mtime_ns
    up = [*NODES[:3], record("dev-e3", "10.42.0.9", "IDLE+CLOUD")]
    targets.write_targets(ctx, HEAD, MONITORING, NODES)
    assert ctx.path(targets.GPUS_FILE).stat().st_mtime_ns == stamp
    targets.write_targets(ctx, HEAD, MONITORING, up)
    assert "10.42.0.9:9100" in ctx.path(targets.NODES_FILE).read_text()


def test_the_prolog_and_epilog_keep_one_file_per_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = Context(root=tmp_path)
    monkeypatch.setenv("SLURM_JOB_ID", "41")
    monkeypatch.setenv("SLURM_JOB_GPUS", "0,2")
    assert gpu_jobs.job_started(ctx) == 0
    monkeypatch.setenv("SLURM_JOB_ID", "43")
    monkeypatch.setenv("SLURM_JOB_GPUS", "2")
    gpu_jobs.job_started(ctx)
    folder = ctx.path(GPU_JOB_DIR)
    assert {p.name: p.read_text() for p in folder.iterdir()} == {"0": "41\n", "2": "41\n43\n"}
    monkeypatch.setenv("SLURM_JOB_ID", "41")
    monkeypatch.delenv("SLURM_JOB_GPUS")  # what it held is read from the files
    gpu_jobs.job_ended(ctx)
    assert {p.name: p.read_text() for p in folder.iterdir()} == {"0": "", "2": "43\n"}


def test_efa_counters_are_the_drivers_own(tmp_path: Path) -> None:
    port = tmp_path / "sys/class/infiniband/rdmap16s27/ports/1"
    (port / "hw_counters").mkdir(parents=True)
    (port / "state").write_text("4: ACTIVE\n")
    (port / "hw_counters/rdma_read_bytes").write_text("1024\n")
    (port / "hw_counters/lifespan").write_text("12\n")
    samples = efa_samples(Context(root=tmp_path))
    labels = {"device": "rdmap16s27", "port": "1"}
    assert ("slurmstack_efa_port_active", labels, 1.0) in samples
    assert (
        "slurmstack_efa_hw_counter_total",
        {**labels, "counter": "rdma_read_bytes"},
        1024.0,
    ) in samples


NOTIFICATION = {
    "version": "4",
    "status": "firing",
    "groupLabels": {"alertname": "NodeDrainedByHealthCheck"},
    "alerts": [
        {
            "status": "firing",
            "labels": {"alertname": "NodeDrainedByHealthCheck", "severity": "warning",
                       "node": "train-10-42-0-6", "pool": "train", "check": "gpu-xid",
                       "remedy": "replace"},
            "annotations": {"summary": "train-10-42-0-6 (train) drained by the gpu-xid check"},
            "startsAt": "2025-06-15T15:00:00Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "fingerprint": "abc",
        }
    ],
}  # fmt: skip


def test_the_relay_sends_each_alert_as_an_event_and_the_notification_to_the_topic(
    aws, tmp_path: Path
) -> None:
    ctx = Context(root=tmp_path, session=aws)
    ctx.path(NODE_CONFIG_PATH).parent.mkdir(parents=True)
    ctx.path(NODE_CONFIG_PATH).write_text(dump_document(HEAD))
    env = BootstrapEnv(PLAN.name, PLAN.region, "head", PLAN.parameter_prefix, "m", "p", "b")
    ctx.path(BOOTSTRAP_ENV_PATH).write_text(bootstrap_env_text(env))
    topic = aws.client("sns").create_topic(Name="alerts")["TopicArn"]
    queue = aws.client("sqs").create_queue(QueueName="mail")["QueueUrl"]
    queue_arn = aws.client("sqs").get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    aws.client("sns").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    events = aws.client("events")
    events.put_rule(Name="all", EventPattern=json.dumps({"source": [ALERT_EVENT_SOURCE]}))
    seen = aws.client("sqs").create_queue(QueueName="events")["QueueUrl"]
    seen_arn = aws.client("sqs").get_queue_attributes(QueueUrl=seen, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    events.put_targets(Rule="all", Targets=[{"Id": "q", "Arn": seen_arn}])
    aws.client("ssm").put_parameter(
        Name=ctx.parameter_name(DeployParameter.ALERT_TOPIC_ARN), Value=topic, Type="String"
    )
    details = relay.Relay(ctx).deliver(NOTIFICATION)
    assert details[0]["node"] == "train-10-42-0-6" and details[0]["check"] == "gpu-xid"
    event = json.loads(aws.client("sqs").receive_message(QueueUrl=seen)["Messages"][0]["Body"])
    assert event["source"] == ALERT_EVENT_SOURCE and event["detail-type"] == ALERT_EVENT_DETAIL_TYPE
    assert event["detail"]["alert"] == "NodeDrainedByHealthCheck"
    assert event["detail"]["schema_version"] == 1 and event["detail"]["cluster"] == PLAN.name
    mail = json.loads(aws.client("sqs").receive_message(QueueUrl=queue)["Messages"][0]["Body"])
    assert mail["Subject"] == f"[slurmstack {PLAN.name}] FIRING: NodeDrainedByHealthCheck (1)"
    assert mail["Message"].startswith("firing: NodeDrainedByHealthCheck (warning): train-10-42-0-6")


def test_the_agent_lists_the_observe_rooms_subcommands() -> None:
    out = subprocess.run(
        ["python", "-m", "slurmstack.node.cli", "--help"], capture_output=True, text=True,
        cwd=Path(__file__).resolve().parents[4] / "infra",
    ).stdout  # fmt: skip
    for name in ("node-metrics", "head-metrics", "gpu-job-start", "gpu-job-end", "alert-relay"):
        assert name in out
