"""Stand-ins "elastic-instances" and "power-env": the elastic nodes' instances, which the head's
power programs launch and terminate through moto, as nodes of the virtual cluster.

``ElasticNodes.sync`` does what EC2 does for those instances: one that moto launched (it carries
the elastic tag) boots as a node, from its own user data (its pool's launch template's), as the
groups' instances do; one that moto terminated dies. A scenario calls it from its wait loops:
nodes are made on the thread that runs the scenario (see VirtualCluster.boot).
"""

from __future__ import annotations

from slurmstack.contract import CLUSTER_TAG, ELASTIC_TAG, LAUNCH_TAG, POWER_ENV_PATH

from .cluster import VirtualCluster
from .node import Node

GONE_STATES = ("shutting-down", "terminated")


class ElasticNodes:
    def __init__(self, cluster: VirtualCluster) -> None:
        self.cluster = cluster
        self.nodes: dict[str, Node] = {}  # instance id -> node

    def instances(self) -> dict[str, dict[str, str]]:
        """Every instance moto launched with the elastic tag for this cluster: id -> state and
        tags. (Clusters of one Region share moto's backend within a test run: another
        cluster's elastic instances, left running when it closed, are not this one's.)"""
        pages = self.cluster.aws.client("ec2").get_paginator("describe_instances")
        out = {}
        filters = [
            {"Name": "tag-key", "Values": [ELASTIC_TAG]},
            {"Name": f"tag:{CLUSTER_TAG}", "Values": [self.cluster.plan.name]},
        ]
        for page in pages.paginate(Filters=filters):
            for reservation in page["Reservations"]:
                for item in reservation["Instances"]:
                    tags = {t["Key"]: t["Value"] for t in item.get("Tags", [])}
                    out[item["InstanceId"]] = {"State": item["State"]["Name"], **tags}
        return out

    def sync(self) -> None:
        """Kill the nodes of terminated instances, boot the new ones the power programs
        launched (each reads its name in its launch's object at boot)."""
        known = self.instances()
        for instance_id, node in list(self.nodes.items()):
            if known.get(instance_id, {}).get("State", "terminated") in GONE_STATES:
                self.cluster.kill(node)
                del self.nodes[instance_id]
        booted = {n.instance_id for n in self.cluster.gone} | set(self.nodes)
        new = [
            i
            for i, info in sorted(known.items())
            if i not in booted and info["State"] not in GONE_STATES and LAUNCH_TAG in info
        ]
        for node in self.cluster.boot(new):
            # Not one of the groups' workers: those are named by their address.
            self.cluster.workers.pop(node.instance_id, None)
            self.nodes[node.instance_id] = node

    def named(self, node_name: str) -> Node | None:
        """The node Slurm runs as ``node_name`` (at its address)."""
        address = self.cluster.node_records().get(node_name, {}).get("NodeAddr")
        return next((n for n in self.nodes.values() if n.address == address), None)


def prepare_head(cluster: VirtualCluster) -> None:
    """Stand-in "power-env": the AWS environment every command on a node gets, for the power
    programs slurmctld runs without one; on the backup controller too, when there is one (it
    runs them while it is in control)."""
    keys = ("AWS_ENDPOINT_URL", "AWS_METADATA_SERVICE_TIMEOUT", "AWS_METADATA_SERVICE_NUM_ATTEMPTS")
    for node in (cluster.head, cluster.backup):
        if node is not None:
            text = "".join(f"{k}={node.env[k]}\n" for k in keys)
            node.write_file(POWER_ENV_PATH, text, "0644", "root:root")
