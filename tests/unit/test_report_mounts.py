"""plan's mounts: every mount (what, where, how reached, cost) and the time to first data with
its sources."""

from __future__ import annotations

from slurmstack.report.data import mounts_section
from stack.test_data_stack import byo
from support.stack import plan_of


def test_plan_shows_every_mount_with_reach_cost_and_first_data() -> None:
    plan = plan_of(byo())
    mounts = {m["mount"]: m for m in mounts_section(plan)["mounts"]}
    assert sorted(mounts) == sorted(
        ["/home", "/shared-lustre", "/zfs", "/fsx/datasets", "/fsx/checkpoints", "/fsx/imagenet",
         "/s3/text", "/s3/export"]
    )  # fmt: skip
    assert mounts["/shared-lustre"]["reached_by"].startswith("Lustre client, TCP 988")
    assert "nothing added by the stack" in mounts["/shared-lustre"]["cost"]
    assert mounts["/zfs"]["what"] == "your openzfs file system fs-0fedcba9876543210 (/fsx/projects)"
    # 2400 GiB at 250 MB/s/TiB = 586 MB/s: a TiB takes at least 31.3 minutes to lazy-load.
    imagenet = mounts["/fsx/imagenet"]
    assert "586 MB/s" in imagenet["first_data"] and ">= 31.3 min per TiB" in imagenet["first_data"]
    assert imagenet["first_data"].startswith("metadata: on access or an import task")
    assert imagenet["import"] == ["NEW", "CHANGED", "DELETED"] and imagenet["export"] == []
    assert any("Lazy load" in s for s in imagenet["sources"])
    # p5.48xlarge: 3200 Gbit/s; Mountpoint's first byte is one S3 request away.
    text = mounts["/s3/text"]
    assert "(read-only)" in text["what"] and "first byte 100-200 ms" in text["first_data"]
    assert "GET $0.0004" in text["cost"] and "no transfer charge" in text["cost"]
    assert "(writes new objects)" in mounts["/s3/export"]["what"]


def test_a_plain_cluster_lists_its_one_association() -> None:
    from support.examples import example_plan

    mounts = mounts_section(example_plan("p5-training"))["mounts"]
    assert [m["mount"] for m in mounts if "association" in m["what"]] == ["/fsx/datasets"]
