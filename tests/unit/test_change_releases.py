"""slurmstack.change.releases: the releases of a saved plan, and what a slurm.conf written for
a newer release sets that the same cluster's file for an older one leaves out."""

from __future__ import annotations

from slurmstack.change.releases import DeployedSlurm, from_document, release_findings, too_new
from slurmstack.loader import load_object


def test_a_saved_plans_releases() -> None:
    document = {
        "slurm": {
            "version": "26.05.5",
            "order": [
                {"where": "head node", "version": "26.05.5"},
                {"where": "pool gpu", "version": "24.11.5"},
                {"where": "login pool login", "version": "26.05.5"},
            ],
        }
    }
    assert from_document(document) == DeployedSlurm("26.05.5", {"gpu": "24.11.5"})
    assert from_document({"resources": []}) is None


def test_too_new_names_new_lines_and_new_options_of_a_named_line() -> None:
    floor = "ClusterName=c\nPartitionName=gpu Nodes=g OverSubscribe=EXCLUSIVE State=UP\n"
    conf = (
        "ClusterName=c\nHealthCheckTimeout=9  # a comment\n"
        "PartitionName=gpu Nodes=g Exclusive=NODE State=UP\nPartitionName=cpu Nodes=c\n"
    )
    assert too_new(conf, floor) == ["HealthCheckTimeout", "Exclusive=NODE", "PartitionName"]
    assert too_new(floor, floor) == []


def test_a_jump_past_the_window_is_refused_before_anything_is_compared() -> None:
    loaded = load_object(
        {
            "name": "c",
            "region": "us-east-1",
            "availability_zone": "us-east-1a",
            "head_node": {"instance_type": "m7i.large"},
            "pools": [{"name": "cpu", "instance_type": "c7i.2xlarge", "count": 1}],
            "slurm": {"version": "26.05.5"},
        }
    )
    assert loaded.spec is not None, loaded.findings
    (finding,) = release_findings(DeployedSlurm("23.11.4", {"cpu": "23.11.4"}), loaded.spec)
    assert finding.path == "slurm.version" and "24.11" in finding.message
