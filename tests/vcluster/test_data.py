"""Your own data on the virtual cluster (marker `data`): a Lustre file system of yours mounted
at its path on every node by the names the stack looked up; Mountpoint for S3 serving a
dataset prefix of your bucket to a job on two nodes, read-only, the job user unable to write
or to reach the node's credentials, and a writable prefix exporting what a job writes; two
data repository associations putting each prefix at its own directory of the stack's Lustre
and moving data only in the directions their policies give.

One cluster (definitions/data.yaml: a head node, two workers) for the module. Stand-ins
(harness/standins.py): "existing-file-systems", "mountpoint-s3" (Debian's s3fs over moto's S3
in place of mount-s3), "fsx-associations" (the harness does FSx's import and export).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmstack.contract import DeployParameter
from vcluster.conftest import require_host
from vcluster.harness import VirtualCluster, wait_until
from vcluster.harness.node import Node

pytestmark = [pytest.mark.vcluster, pytest.mark.data]

DEFINITION = Path(__file__).resolve().parent / "definitions" / "data.yaml"
JOB_USER = "nobody"  # an ordinary user, in every node's /etc/passwd
FILE_SYSTEM_ID = "fs-0123456789abcdef0"  # the definition's storage.existing[0]
DATASETS = "vdata-datasets"  # the bucket of yours the definition mounts and associates
# Objects of yours before the cluster exists: an S3 dataset (Mountpoint's prefix text/, the
# association's prefix imagenet/), and one outside both prefixes.
OBJECTS = {
    "text/shard-0.txt": b"the quick brown fox\n",
    "text/sub/shard-1.txt": b"jumps over the lazy dog\n",
    "imagenet/train/0.bin": bytes(range(256)) * 64,
    "private/other.txt": b"not mounted\n",
}
CORPUS = os.urandom(1 << 16)  # what your Lustre file system holds
# A metadata token request (IMDSv2's first call) from a job: "refused" unless it got through.
TOKEN_REQUEST = (
    "import urllib.request as u\n"
    "r = u.Request('http://169.254.169.254/latest/api/token', method='PUT',\n"
    "              headers={'X-aws-ec2-metadata-token-ttl-seconds': '60'})\n"
    "try:\n"
    "    print(u.urlopen(r, timeout=5).status)\n"
    "except OSError:\n"
    "    print('refused')\n"
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def existing_source(cluster: VirtualCluster) -> str:
    """The Lustre source of your file system, from the names the stack published (the FSx
    console's `mount -t lustre <dns>@tcp:/<mount name>`)."""
    prefix = f"/storage/{FILE_SYSTEM_ID}/"
    dns = cluster.deployment.parameters[cluster.deployment.parameter(prefix + "dns-name")]
    name = cluster.deployment.parameters[cluster.deployment.parameter(prefix + "mount-name")]
    return f"{dns}@tcp:/{name}"


def before_boot(cluster: VirtualCluster) -> None:
    """What you have before `pulumi up`: the dataset bucket, and your file system's data."""
    s3 = cluster.aws.client("s3")
    s3.create_bucket(Bucket=DATASETS)
    for key, body in OBJECTS.items():
        s3.put_object(Bucket=DATASETS, Key=key, Body=body)
    served = cluster.existing_directory("lustre", existing_source(cluster))
    (served / "corpus").mkdir(parents=True)
    (served / "corpus" / "part-0.bin").write_bytes(CORPUS)


@pytest.fixture(scope="module")
def data_cluster() -> Iterator[VirtualCluster]:
    require_host()
    if not os.path.exists("/usr/bin/s3fs"):
        pytest.fail("the data scenarios need /usr/bin/s3fs (apt: s3fs), Mountpoint's stand-in")
    keep = os.environ.get("VCLUSTER_KEEP") == "1"
    with VirtualCluster(DEFINITION, keep=keep, before_boot=before_boot) as cluster:
        yield cluster
    assert cluster.leftovers() == []


def every_node(cluster: VirtualCluster) -> list[Node]:
    assert cluster.head is not None
    return [cluster.head, *cluster.workers.values()]


def job(cluster: VirtualCluster, script: str, user: str = "root", nodes: int = 2) -> list[str]:
    """``script`` as one task on each of ``nodes`` workers, as ``user``, from the head node;
    the output's lines, sorted."""
    assert cluster.head is not None
    cmd = ["srun", f"-N{nodes}", "--ntasks-per-node=1", "-t", "2", "--chdir=/tmp", "sh", "-c"]
    if user != "root":
        cmd = ["runuser", "-u", user, "--", *cmd]
    out = cluster.head.run(*cmd, script, timeout=120).stdout
    return sorted(out.splitlines())


def worker_names(cluster: VirtualCluster) -> list[str]:
    return sorted(cluster.slurm_name(n) for n in cluster.workers.values())


def test_a_file_system_of_yours_is_mounted_at_its_path_on_every_node(
    data_cluster: VirtualCluster,
) -> None:
    cluster = data_cluster
    # The stack read it (a `get`) and never made or changed it.
    assert ("aws:fsx/lustreFileSystem:LustreFileSystem", FILE_SYSTEM_ID) in {
        (t, i) for t, _, i in cluster.offline.reads
    }
    made = cluster.offline.of_type("aws:fsx/lustreFileSystem:LustreFileSystem")
    assert [r.name for r in made] == ["vdata-lustre"]  # the stack's own, not yours
    for node in every_node(cluster):
        assert node.run("mountpoint", "-q", "/shared", check=False).returncode == 0, node.label()
    # A job on both workers reads your data where the definition put it.
    lines = job(cluster, "echo $(hostname) $(sha256sum < /shared/corpus/part-0.bin)")
    assert lines == [f"{name} {sha(CORPUS)} -" for name in worker_names(cluster)]
    # One file system: what a job writes on one node, another node reads.
    first, second = sorted(cluster.workers.values(), key=lambda n: n.address)
    first.run("sh", "-c", "echo from-first > /shared/corpus/note.txt")
    assert second.run("cat", "/shared/corpus/note.txt").stdout == "from-first\n"


def test_mountpoint_serves_a_dataset_read_only_to_a_job_on_two_nodes(
    data_cluster: VirtualCluster,
) -> None:
    cluster = data_cluster
    for node in every_node(cluster):
        # The agent's s3-mounts step made it, and recorded it for later boots.
        mounts = node.run("cat", "/proc/mounts").stdout
        assert any(f.split()[1] == "/s3/text" and "fuse" in f.split()[2]
                   for f in mounts.splitlines()), (node.label(), mounts)  # fmt: skip
        fstab = node.run("cat", "/etc/fstab").stdout
        assert f"s3://{DATASETS}/text/ /s3/text mount-s3 _netdev,nosuid,nodev,nofail,ro," in fstab
    # The job user reads the prefix (allow-other) on both workers; nothing outside it shows.
    lines = job(
        cluster,
        "echo $(hostname) $(cat /s3/text/shard-0.txt /s3/text/sub/shard-1.txt | sha256sum) "
        "$(ls /s3/text | tr '\\n' ,)",
        user=JOB_USER,
    )
    expected = sha(OBJECTS["text/shard-0.txt"] + OBJECTS["text/sub/shard-1.txt"])
    assert lines == [f"{name} {expected} - shard-0.txt,sub," for name in worker_names(cluster)]
    # Read-only: neither the job user nor root writes through it.
    refused = job(
        cluster,
        "if echo x > /s3/text/new.txt 2>/dev/null; then echo wrote; else echo refused; fi",
        user=JOB_USER,
    )
    assert refused == ["refused", "refused"]
    worker = next(iter(cluster.workers.values()))
    assert worker.run("sh", "-c", "echo x > /s3/text/root.txt", check=False).returncode != 0
    keys = cluster.aws.client("s3").list_objects_v2(Bucket=DATASETS, Prefix="text/")["Contents"]
    assert sorted(k["Key"] for k in keys) == ["text/shard-0.txt", "text/sub/shard-1.txt"]


def test_a_job_user_reaches_neither_the_credentials_nor_the_mount_process(
    data_cluster: VirtualCluster,
) -> None:
    cluster = data_cluster
    for worker in cluster.workers.values():
        # The mount is served by root's process, which took the role's credentials from the
        # metadata service (root gets through the node's firewall).
        pids = worker.run("pgrep", "-x", "s3fs").stdout.split()
        assert len(pids) == 2, worker.label()  # /s3/text and /s3/export
        owners = {worker.run("stat", "-c", "%U", f"/proc/{p}").stdout.strip() for p in pids}
        assert owners == {"root"}, worker.label()
        assert "iam_role=" in worker.run("cat", f"/proc/{pids[0]}/cmdline").stdout
    pid_of = "$(pgrep -x s3fs | head -1)"
    lines = job(
        cluster,
        f'python3 -c "{TOKEN_REQUEST}"; '
        f"if cat /proc/{pid_of}/environ >/dev/null 2>&1; then echo environ; else echo no-environ; fi",
        user=JOB_USER,
    )
    assert lines == ["no-environ", "no-environ", "refused", "refused"]
    # Root on the same node does get a token: the firewall, not a broken service, refused it.
    worker = next(iter(cluster.workers.values()))
    out = worker.run("python3", "-c", TOKEN_REQUEST).stdout.strip()
    assert out == "200"


def test_a_writable_prefix_exports_what_a_job_writes(data_cluster: VirtualCluster) -> None:
    cluster = data_cluster
    bucket = cluster.deployment.parameters[cluster.deployment.parameter(DeployParameter.BUCKET)]
    job(cluster, "echo step-1 from $(hostname) > /s3/export/ckpt-$(hostname).txt", user=JOB_USER)
    s3 = cluster.aws.client("s3")
    for name in worker_names(cluster):
        body = s3.get_object(Bucket=bucket, Key=f"exports/ckpt-{name}.txt")["Body"].read()
        assert body == f"step-1 from {name}\n".encode()
    # Only its prefix: the mount reaches nothing else of the cluster bucket.
    worker = next(iter(cluster.workers.values()))
    assert "config" not in worker.run("ls", "/s3/export").stdout


def test_associations_put_each_prefix_at_its_path_and_move_data_as_their_policies_say(
    data_cluster: VirtualCluster,
) -> None:
    cluster = data_cluster
    bucket = cluster.deployment.parameters[cluster.deployment.parameter(DeployParameter.BUCKET)]
    s3 = cluster.aws.client("s3")
    # Batch import at creation: the dataset prefix is at /fsx/datasets on both workers.
    image = OBJECTS["imagenet/train/0.bin"]
    lines = job(cluster, "echo $(hostname) $(sha256sum < /fsx/datasets/train/0.bin)")
    assert lines == [f"{name} {sha(image)} -" for name in worker_names(cluster)]
    # A job writes a checkpoint and a scratch file; new objects arrive in both buckets.
    job(cluster, "echo ckpt > /fsx/checkpoints/step-1.pt; echo tmp > /fsx/datasets/tmp.txt",
        nodes=1)  # fmt: skip
    s3.put_object(Bucket=DATASETS, Key="imagenet/train/1.bin", Body=b"new shard")
    s3.put_object(Bucket=bucket, Key="checkpoints/uploaded.pt", Body=b"from elsewhere")
    imported, exported = cluster.sync_associations()
    # Import only where the policy imports (datasets), export only where it exports
    # (checkpoints).
    assert imported == ["/datasets/train/1.bin"]
    assert exported == ["/checkpoints/step-1.pt"]
    assert s3.get_object(Bucket=bucket, Key="checkpoints/step-1.pt")["Body"].read() == b"ckpt\n"
    listed = s3.list_objects_v2(Bucket=DATASETS, Prefix="imagenet/")["Contents"]
    assert sorted(k["Key"] for k in listed) == ["imagenet/train/0.bin", "imagenet/train/1.bin"]
    worker = next(iter(cluster.workers.values()))
    wait_until(
        lambda: worker.run("cat", "/fsx/datasets/train/1.bin", check=False).stdout == "new shard",
        "the new shard on a worker",
        timeout=10,
    )
    assert worker.run("test", "-e", "/fsx/checkpoints/uploaded.pt", check=False).returncode == 1
