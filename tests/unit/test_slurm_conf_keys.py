"""slurm.conf sets each key once: Slurm takes the last of two lines of one key, so a key written
twice (ResumeTimeout was, for the elastic nodes and for reboots) is a silent override waiting for
the two values to drift apart. Line-kind keys (one line per node, NodeSet, partition) repeat."""

from __future__ import annotations

from collections import Counter

import pytest

from slurmstack.render import slurm_conf, slurm_conf_keys
from support.examples import EXAMPLE_IDS, example_plan
from support.stack import plan_of, small_cluster

# Keys that declare one thing per line (slurm.conf(5): node, NodeSet and partition lines).
LINE_KINDS = frozenset({"NodeName", "NodeSet", "PartitionName", "DownNodes", "FrontendName"})


def duplicates(text: str) -> list[str]:
    counts = Counter(k for k in slurm_conf_keys(text) if k not in LINE_KINDS)
    return sorted(k for k, n in counts.items() if n > 1)


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_every_example_sets_each_key_once(example: str) -> None:
    assert duplicates(slurm_conf(example_plan(example))) == []


def test_an_elastic_cluster_sets_resume_timeout_once_with_no_rate_limit() -> None:
    text = slurm_conf(plan_of(small_cluster(count=0, max_count=64)))
    assert duplicates(text) == []
    keys = slurm_conf_keys(text)
    assert keys.count("ResumeTimeout") == 1
    # One ResumeProgram call per job's nodes: slurmctld's default rate (300 a minute) would
    # split a large job over several calls and its all-or-nothing launch with it.
    assert "ResumeRate=0" in text.splitlines() and "SuspendRate=0" in text.splitlines()


def test_the_check_finds_a_key_written_twice() -> None:
    assert duplicates("ResumeTimeout=1800\nNodeName=a\nNodeName=b\nResumeTimeout=600\n") == [
        "ResumeTimeout"
    ]
