"""The agent's data steps: file systems of yours (mounts, by the names the stack published)
and Mountpoint for S3 (s3-mounts: command line, fstab, cache, credentials left to root)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from slurmstack.contract import (
    DeployParameter,
    Mount,
    MountKind,
    NodeConfig,
    S3Mount,
    dump_document,
    existing_parameter,
    load_document,
)
from slurmstack.node.boot import mounts, s3_mounts
from slurmstack.node.context import AgentError
from slurmstack.render.node import node_config
from support.node import PLAN, Runner, make_node

LUSTRE, ZFS, EFS = "fs-0123456789abcdef0", "fs-0fedcba9876543210", "fs-0a1b2c3d"


def write_config(tmp_path: Path, **changes: object) -> None:
    config = replace(node_config(PLAN, PLAN.pools[0]), **changes)
    path = tmp_path / "etc/slurmstack/node.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_document(config))


def helpers(tmp_path: Path, *names: str) -> None:
    (tmp_path / "sbin").mkdir(exist_ok=True)
    for name in names:
        (tmp_path / "sbin" / name).touch()


def test_file_systems_of_yours_mount_by_the_names_the_stack_published(aws, tmp_path: Path) -> None:
    ssm = aws.client("ssm")
    for key, value in {
        existing_parameter(LUSTRE, "dns-name"): f"{LUSTRE}.fsx.us-east-1.amazonaws.com",
        existing_parameter(LUSTRE, "mount-name"): "q7wxyzab",
        existing_parameter(ZFS, "dns-name"): f"{ZFS}.fsx.us-east-1.amazonaws.com",
    }.items():
        ssm.put_parameter(Name=PLAN.parameter(key), Value=value, Type="String")
    write_config(
        tmp_path,
        mounts=(
            Mount(MountKind.EFS, "/home", EFS),
            Mount(MountKind.LUSTRE, "/datasets", LUSTRE),
            Mount(MountKind.OPENZFS, "/zfs", ZFS, "/fsx/projects"),
        ),
        lustre_efa_interfaces=None,
    )
    helpers(tmp_path, "mount.efs", "mount.lustre", "mount.nfs")
    run = Runner()
    node = make_node(tmp_path, aws, PLAN.pools[0].name, run=run)
    assert mounts.mounts(node, delay=0) == ["/home", "/datasets", "/zfs"]
    fstab = (tmp_path / "etc/fstab").read_text()
    assert f"{EFS}:/ /home efs tls,_netdev,nofail 0 0" in fstab
    assert f"{LUSTRE}.fsx.us-east-1.amazonaws.com@tcp:/q7wxyzab /datasets lustre" in fstab
    assert f"{ZFS}.fsx.us-east-1.amazonaws.com:/fsx/projects /zfs nfs nfsvers=4.1," in fstab
    assert run.calls == [["mount", "/home"], ["mount", "/datasets"], ["mount", "/zfs"]]


def test_a_missing_nfs_client_fails_the_step(aws, tmp_path: Path) -> None:
    write_config(tmp_path, mounts=(Mount(MountKind.OPENZFS, "/zfs", ZFS, "/fsx"),))
    node = make_node(tmp_path, aws, PLAN.pools[0].name)
    with pytest.raises(AgentError, match=r"mount\.nfs is missing"):
        mounts.mounts(node, delay=0)


DATASET = S3Mount("/s3/text", "team-datasets", "text/", "us-east-1",
                  cache_dir="/scratch/mountpoint-cache/s3-text", cache_max_mib=10240)  # fmt: skip
EXPORT = S3Mount("/s3/export", "", "exports/", "us-east-1", read_only=False)


def test_s3_mounts_run_mount_s3_as_root_with_the_mount_options(aws, tmp_path: Path) -> None:
    write_config(tmp_path, s3_mounts=(DATASET, EXPORT))
    helpers(tmp_path, "mount-s3")
    cluster_bucket = "llm-train-bucket-0a1b2c3"
    ssm = aws.client("ssm")
    ssm.put_parameter(
        Name=PLAN.parameter(DeployParameter.BUCKET), Value=cluster_bucket, Type="String"
    )
    run = Runner()
    node = make_node(tmp_path, aws, PLAN.pools[0].name, run=run)
    assert s3_mounts.s3_mounts(node, delay=0) == ["/s3/text", "/s3/export"]
    program = str(Path("/sbin/mount-s3"))
    assert run.calls == [
        [program, "team-datasets", "/s3/text", "--prefix", "text/", "--region", "us-east-1",
         "--read-only", "--allow-other", "--cache", "/scratch/mountpoint-cache/s3-text",
         "--max-cache-size", "10240"],
        [program, cluster_bucket, "/s3/export", "--prefix", "exports/", "--region", "us-east-1",
         "--dir-mode", "0777", "--allow-other"],
    ]  # fmt: skip
    # No credentials on the command line or in the environment: mount-s3 asks the metadata
    # service itself, as root.
    assert not any(
        "AWS_" in word or "secret" in word.lower() for call in run.calls for word in call
    )
    fstab = (tmp_path / "etc/fstab").read_text()
    assert (
        "s3://team-datasets/text/ /s3/text mount-s3 _netdev,nosuid,nodev,nofail,ro,"
        "region=us-east-1,allow-other,cache=/scratch/mountpoint-cache/s3-text,"
        "max-cache-size=10240 0 0" in fstab
    )
    assert (
        f"s3://{cluster_bucket}/exports/ /s3/export mount-s3 _netdev,nosuid,nodev,nofail,rw,"
        in fstab
    )
    cache = tmp_path / "scratch/mountpoint-cache/s3-text"
    assert cache.is_dir() and cache.stat().st_mode & 0o777 == 0o700


def test_without_mount_s3_in_the_image_the_step_fails(aws, tmp_path: Path) -> None:
    write_config(tmp_path, s3_mounts=(DATASET,))
    node = make_node(tmp_path, aws, PLAN.pools[0].name)
    with pytest.raises(AgentError, match="mount-s3 is missing"):
        s3_mounts.s3_mounts(node, delay=0)


def test_node_json_round_trips_the_data_fields() -> None:
    config = replace(
        node_config(PLAN, PLAN.pools[0]),
        mounts=(Mount(MountKind.OPENZFS, "/zfs", ZFS, "/fsx/p"),),
        s3_mounts=(DATASET, EXPORT),
    )
    text = dump_document(config)
    assert load_document(NodeConfig, text) == config
    data = json.loads(text)
    assert data["mounts"] == [{"kind": "openzfs", "path": "/zfs", "file_system_id": ZFS,
                               "export_path": "/fsx/p"}]  # fmt: skip
    # Without data fields, node.json is what it was (the golden files do not change).
    plain = json.loads(dump_document(node_config(PLAN, PLAN.pools[0])))
    assert "s3_mounts" not in plain and all(set(m) == {"kind", "path"} for m in plain["mounts"])
