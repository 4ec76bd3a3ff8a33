"""Only root reaches the instance metadata service, on every node of the virtual cluster, and
SlurmUser on the head node (slurmctld runs the elastic pools' power programs as it).

Each node loaded its own rendered rule set with Debian's nft, in its own network namespace:
runcmd enables and starts slurmstack-imds-firewall.service before the bootstrap, and the unit's
RequiredBy links make munge and the node's Slurm daemon require it (the systemctl stand-in
follows them as systemd does). Behind it the stand-in metadata service answers whoever gets
through. Root gets through (the whole boot, which takes its credentials from the metadata
service, depends on it); a job user does not, and neither does the slurm user on a worker: the
rule set's reject counter counts their packets. On the head node the slurm user gets through.
"""

from __future__ import annotations

import re

import pytest

from slurmstack import imds_firewall
from vcluster.harness import VirtualCluster
from vcluster.harness.node import Node

pytestmark = pytest.mark.vcluster

# A metadata token request (IMDSv2's first call) made as USER: prints the answer's status, or
# the error that stopped it. Runs on the node's system python.
TOKEN_REQUEST = """
import os, pwd, sys, urllib.request
user = pwd.getpwnam(sys.argv[1])
os.setgid(user.pw_gid)
os.setgroups([])
os.setuid(user.pw_uid)
request = urllib.request.Request(
    "http://169.254.169.254/latest/api/token",
    method="PUT",
    headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"},
)
try:
    with urllib.request.urlopen(request, timeout=10) as response:
        print(response.status)
except OSError as exc:
    print(f"refused: {exc}")
    sys.exit(1)
"""
JOB_USERS = ("nobody", "slurm")
HEAD_USERS = ("root", "slurm")  # slurmctld's power programs run as SlurmUser


def token_request(node: Node, user: str) -> tuple[int, str]:
    done = node.run("/usr/bin/python3", "-c", TOKEN_REQUEST, user, check=False, timeout=30)
    return done.returncode, done.stdout.strip()


def rejected_packets(node: Node) -> int:
    chain = node.run("nft", "list", "chain", "inet", imds_firewall.TABLE, "metadata").stdout
    match = re.search(r"counter packets (\d+) bytes \d+ reject", chain)
    assert match, chain
    return int(match.group(1))


def test_only_root_reaches_the_metadata_service_on_every_node(vcluster: VirtualCluster) -> None:
    assert vcluster.head is not None
    nodes = [vcluster.head, *vcluster.workers.values()]
    for node in nodes:
        label = node.label()
        assert node.run("systemctl", "is-active", imds_firewall.UNIT_NAME).stdout.strip() == (
            "active"
        ), label
        daemon = "slurmctld.service" if node is vcluster.head else "slurmstack-slurmd.service"
        for unit in ("munge.service", daemon):
            link = f"/etc/systemd/system/{unit}.requires/{imds_firewall.UNIT_NAME}"
            assert node.run("test", "-L", link, check=False).returncode == 0, (label, link)

        refused_before = rejected_packets(node)
        allowed = HEAD_USERS if node is vcluster.head else ("root",)
        for user in allowed:
            assert token_request(node, user) == (0, "200"), (label, user)
        refused = [u for u in JOB_USERS if u not in allowed]
        for user in refused:
            code, answer = token_request(node, user)
            assert code == 1 and answer.startswith("refused:"), (label, user, answer)
        assert rejected_packets(node) >= refused_before + len(refused), label
