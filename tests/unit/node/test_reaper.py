"""reap: the head node's reaper deletes dead dynamic node records, and only those."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from slurmstack.node import cli, slurm
from slurmstack.node.context import AgentError, Context
from slurmstack.node.controller import reap
from slurmstack.render import role_files
from support.node import LINE_2205, NOW, PLAN, SHOW_CONFIG, Runner, make_node, record


class Scontrol(Runner):
    """scontrol on the head node: `show config`, `show node` (these lines), `delete`."""

    def __init__(self, lines: list[str], refuse: set[str] | None = None) -> None:
        super().__init__()
        self.lines = lines
        self.refuse = refuse or set()

    def __call__(self, cmd: list[str], check: bool = True):

        self.calls.append(cmd)
        if cmd[:3] != list(slurm.SCONTROL):
            return subprocess.CompletedProcess(cmd, 0, "", "")
        args = cmd[3:]
        if args == ["show", "config"]:
            return subprocess.CompletedProcess(cmd, 0, SHOW_CONFIG, "")
        if args[-2:] == ["show", "node"]:
            return subprocess.CompletedProcess(cmd, 0, "\n".join(self.lines) + "\n", "")
        if args[0] == "delete":
            name = args[1].removeprefix("nodename=")
            if name in self.refuse:
                return subprocess.CompletedProcess(cmd, 1, "", "Requested nodes are busy\n")
            return subprocess.CompletedProcess(cmd, 0, "", "")
        raise AssertionError(cmd)

    @property
    def deleted(self) -> list[str]:
        return [c[-1].removeprefix("nodename=") for c in self.calls if "delete" in c]


def head(tmp_path: Path, aws, lines: list[str], **kwargs) -> tuple[Context, Scontrol]:
    config = tmp_path / "etc/slurmstack/node.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(role_files(PLAN, "head")["/etc/slurmstack/node.json"])
    run = Scontrol(lines, **kwargs)
    node = make_node(tmp_path, aws, "head", run=run)
    node.clock = lambda: slurm.slurm_time(NOW)
    return node, run


CLUSTER_NODES = {
    # name: (record, deleted with the default grace?)
    "dead 30 min ago": (record("train-1811", "DOWN+DYNAMIC_NORM+NOT_RESPONDING"), True),
    "dead 22.05": (LINE_2205, True),
    "dead 5 min ago": (
        record("train-1812", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", at="2024-09-01T12:25:00"),
        False,
    ),
    "up": (record("train-1813", "IDLE+DYNAMIC_NORM", reason=None), False),
    "allocated": (
        record("train-1814", "ALLOCATED+DYNAMIC_NORM", reason=None, cpu_alloc=192),
        False,
    ),
    "mixed, not responding": (
        record(
            "train-1815",
            "MIXED+DYNAMIC_NORM+NOT_RESPONDING",
            reason=None,
            cpu_alloc=96,
            alloc_tres="cpu=96,mem=500G,gres/gpu=4",
        ),
        False,
    ),
    "drained by an operator, then dead": (
        record(
            "train-1816",
            "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING",
            reason="GPU Xid=79, RMA ticket 4411",
            by="root",
            at="2024-09-01T08:00:00",
        ),
        False,
    ),
    "drained by Slurm, then dead": (
        record(
            "train-1817",
            "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING",
            reason="Kill task failed",
            at="2024-09-01T11:30:00",
        ),
        True,
    ),
    "DOWN but slurmd answers": (record("train-1818", "DOWN+DYNAMIC_NORM"), False),
    "static node": (record("train-99", "DOWN+NOT_RESPONDING"), False),
    "not a pool of this cluster": (
        record("login-3", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", feature="login"),
        False,
    ),
    "pool name without the pool's feature": (
        record("train-1820", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", feature="other"),
        False,
    ),
    "still completing": (
        record("train-1821", "DOWN+COMPLETING+DYNAMIC_NORM+NOT_RESPONDING"),
        False,
    ),
    "in a reservation": (
        record("train-1822", "DOWN+DYNAMIC_NORM+NOT_RESPONDING+RESERVED"),
        False,
    ),
    "old Slurm reason, slurmd restarted since": (
        record(
            "train-1823",
            "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING",
            reason="Kill task failed",
            at="2024-09-01T09:00:00",
            started="2024-09-01T12:20:00",
            busy="2024-09-01T12:20:00",
        ),
        False,
    ),
}


def test_reap_deletes_only_dead_dynamic_nodes_of_the_pools(aws, tmp_path: Path) -> None:
    node, run = head(tmp_path, aws, [line for line, _ in CLUSTER_NODES.values()])
    result = reap.reap(node, ec2=False)
    expected = [
        slurm.parse_node_line(line)["NodeName"] for line, go in CLUSTER_NODES.values() if go
    ]
    assert run.deleted == expected == ["train-1811", "dev-1811", "train-1817"]
    assert result["deleted"] == expected and result["failed"] == {}
    kept = result["kept"]
    assert "grace" in kept["train-1812"]
    assert "left for the operator" in kept["train-1816"] and "root" in kept["train-1816"]
    assert kept["train-1818"] == "DOWN but slurmd responds"
    assert kept["train-99"] == "not a dynamic node"
    assert "COMPLETING" in kept["train-1821"] and "RESERVED" in kept["train-1822"]
    assert "grace" in kept["train-1823"]
    assert "MIXED" in kept["train-1815"]
    # Up and allocated nodes, and other clusters' names, are not even mentioned.
    assert not {"train-1813", "train-1814", "login-3"} & set(kept)
    # The listing asked for every node, with times scontrol prints the same on 22.05 and 23.11.
    assert [
        "env",
        "SLURM_TIME_FORMAT=standard",
        "scontrol",
        "--all",
        "--oneliner",
        "show",
        "node",
    ] in run.calls


@pytest.mark.parametrize(
    ("grace", "deleted"),
    [
        (900, ["train-1811"]),  # DOWN 30 min: past 15 min; the other 14 min 59 s
        (1800, ["train-1811"]),
        (1801, []),
        (0, ["train-1811", "train-1812"]),
    ],
)
def test_reap_grace_period_counts_from_the_down_stamp(aws, tmp_path, grace, deleted) -> None:
    lines = [
        record("train-1811", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", at="2024-09-01T12:00:00"),
        record("train-1812", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", at="2024-09-01T12:15:01"),
    ]
    node, run = head(tmp_path, aws, lines)
    assert reap.reap(node, grace=grace, ec2=False)["deleted"] == deleted
    assert run.deleted == deleted


def test_reap_allocated_or_operator_drained_nodes_stay_even_with_no_grace(aws, tmp_path) -> None:
    keep = [
        record("train-1", "ALLOCATED+DYNAMIC_NORM", reason=None, cpu_alloc=192),
        record("train-2", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", cpu_alloc=8),
        record("train-3", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", alloc_tres="cpu=8"),
        record("train-4", "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING", reason="maint", by="alice"),
        record("train-5", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", reason="bad NIC", by="root"),
        record("train-6", "IDLE+DRAIN+DYNAMIC_NORM+NOT_RESPONDING", reason="maint", by="root"),
    ]
    node, run = head(tmp_path, aws, keep)
    result = reap.reap(node, grace=0, ec2=False)
    assert result["deleted"] == [] and run.deleted == []
    assert result["kept"]["train-2"] == "resources still allocated"
    assert "alice" in result["kept"]["train-4"]


def test_reap_keeps_an_operator_drain_slurm_23_02_restamped(aws, tmp_path) -> None:
    """From Slurm 23.02 on, a drained node that stops responding gets " : Not responding"
    appended to its reason, and the whole reason stamped with SlurmUser (seen on 24.11;
    set_node_reason in src/slurmctld/node_mgr.c). The operator's part keeps the record; a
    reason made only of Slurm's own messages does not."""
    lines = [
        record(
            "train-1",
            "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING",
            reason="ECC errors on GPU 3 : Not responding",
        ),
        record(
            "train-2",
            "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING",
            reason="Kill task failed : Not responding",
        ),
        record(
            "train-3",
            "DOWN+DRAIN+DYNAMIC_NORM+NOT_RESPONDING",
            reason="maint : Kill task failed : Not responding",
        ),
    ]
    fields = slurm.parse_node_line(lines[0])
    assert (fields["Reason"], fields["ReasonUser"]) == (
        "ECC errors on GPU 3 : Not responding",
        "slurm",
    )
    node, run = head(tmp_path, aws, lines)
    result = reap.reap(node, grace=0, ec2=False)
    assert result["deleted"] == run.deleted == ["train-2"]
    assert "'ECC errors on GPU 3'" in result["kept"]["train-1"]
    assert "left for the operator" in result["kept"]["train-1"]
    assert "'maint'" in result["kept"]["train-3"]


def test_reap_slurm_user_by_uid(aws, tmp_path: Path) -> None:
    """A reason stamp shows the uid when the name does not resolve."""
    node, _run = head(
        tmp_path, aws, [record("train-1", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", by="64030")]
    )
    assert slurm.slurm_users(node) == {"slurm", "64030"}
    assert reap.reap(node, ec2=False)["deleted"] == ["train-1"]


def test_reap_dry_run_deletes_nothing(aws, tmp_path: Path) -> None:
    node, run = head(tmp_path, aws, [record("train-1", "DOWN+DYNAMIC_NORM+NOT_RESPONDING")])
    result = reap.reap(node, ec2=False, dry_run=True)
    assert result["would_delete"] == ["train-1"] and result["deleted"] == []
    assert run.deleted == []


def test_reap_reports_a_refused_delete_and_goes_on(aws, tmp_path: Path, capsys) -> None:
    lines = [
        record("train-1", "DOWN+DYNAMIC_NORM+NOT_RESPONDING"),
        record("train-2", "DOWN+DYNAMIC_NORM+NOT_RESPONDING"),
    ]
    node, _run = head(tmp_path, aws, lines, refuse={"train-1"})
    assert cli.main(["reap", "--no-ec2"], ctx=node) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["deleted"] == ["train-2"]
    assert out["failed"] == {"train-1": "Requested nodes are busy"}


def test_reap_fails_cleanly_without_slurmctld(aws, tmp_path: Path) -> None:

    def down(cmd, check=True):
        return subprocess.CompletedProcess(
            cmd, 1, "", "slurm_load_ctl_conf error: Unable to contact slurm controller"
        )

    node, _run = head(tmp_path, aws, [])
    node.run = down
    assert cli.main(["reap"], ctx=node) == 1


def pool_instance(session, subnet: str, address: str, pool: str, cluster: str = PLAN.name) -> str:
    ec2 = session.client("ec2")
    image = "ami-12c6146b"  # one of moto's built-in images (listing them takes seconds)
    tags = [
        {"Key": "slurmstack:cluster", "Value": cluster},
        {"Key": "slurmstack:pool", "Value": pool},
    ]
    made = ec2.run_instances(
        ImageId=image,
        InstanceType="t3.micro",
        MinCount=1,
        MaxCount=1,
        SubnetId=subnet,
        PrivateIpAddress=address,
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )
    return str(made["Instances"][0]["InstanceId"])


def test_reap_keeps_nodes_a_live_instance_still_answers_for(aws, tmp_path: Path) -> None:
    """The EC2 cross-check (moto): one DescribeInstances by the cluster tag. A record whose
    name or address belongs to a live instance of the cluster stays; a terminated instance's
    record, or one whose address another cluster uses, goes."""
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.42.0.0/16")["Subnet"]["SubnetId"]
    pool_instance(aws, subnet, "10.42.7.19", "train")  # still running: same name, train-1811
    gone = pool_instance(aws, subnet, "10.42.7.20", "train")
    ec2.terminate_instances(InstanceIds=[gone])
    pool_instance(aws, subnet, "10.42.7.21", "train", cluster="someone-else")
    stopped = pool_instance(aws, subnet, "10.42.8.1", "dev")
    ec2.stop_instances(InstanceIds=[stopped])

    def dead(name: str, address: str) -> str:
        line = record(name, "DOWN+DYNAMIC_NORM+NOT_RESPONDING")
        return line.replace("NodeAddr=10.42.7.19", f"NodeAddr={address}")

    lines = [
        dead("train-1811", "10.42.7.19"),
        dead("train-1812", "10.42.7.20"),
        dead("train-1813", "10.42.7.21"),
        dead("dev-2049", "10.42.8.1"),
        dead("train-9999", "train-9999"),  # NodeAddr a host name: matched by name only
    ]
    node, run = head(tmp_path, aws, lines)
    result = reap.reap(node)
    assert result["deleted"] == run.deleted == ["train-1812", "train-1813", "train-9999"]
    assert "instance" in result["kept"]["train-1811"]
    assert "instance" in result["kept"]["dev-2049"]


def test_reap_deletes_nothing_when_ec2_cannot_be_asked(aws, tmp_path: Path) -> None:
    node, run = head(tmp_path, aws, [record("train-1", "DOWN+DYNAMIC_NORM+NOT_RESPONDING")])

    class Broken:
        def client(self, *_a, **_k):
            raise RuntimeError("AccessDenied")

    node.session = Broken()
    with pytest.raises(AgentError, match="cannot list the cluster's instances"):
        reap.reap(node)
    assert run.deleted == []
