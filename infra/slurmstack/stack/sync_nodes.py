"""The sync-nodes document and association: on every configuration push each node of the
cluster (by its cluster tag: workers, login nodes, and the head, where it is harmless) pulls
its role's files from the config store and applies the people (``identities``), so people
added, changed or removed reach every node without a reboot."""

from __future__ import annotations

import json
import shlex

import pulumi
import pulumi_aws.ssm as ssm

from slurmstack.contract import AGENT_PATH, BOOTSTRAP_DONE, CLUSTER_TAG, Command, resource_name
from slurmstack.plan import ClusterPlan
from slurmstack.stack.common import Role, tags

# The association's parameter (a change of the manifest re-runs it): config_store's too.
MANIFEST_HASH_PARAMETER = "ManifestHash"
# A sync and the people's accounts take seconds; the bound is the apply-config document's.
SYNC_TIMEOUT_SECONDS = 600


def sync_nodes_commands(
    *,
    agent: str = AGENT_PATH,
    done_marker: str = BOOTSTRAP_DONE,
) -> list[str]:
    """The shell script every node of the cluster runs on a configuration push: its role's
    files from the store, then the people (identities), without a reboot. A node still
    booting does nothing: its bootstrap syncs and applies the newest manifest itself."""
    param = "{{ " + MANIFEST_HASH_PARAMETER + " }}"
    q = shlex.quote
    return [
        "set -u",
        f"agent={q(agent)}",
        f"done_marker={q(done_marker)}",
        f"echo 'config manifest {param}'",
        'if [ ! -e "$done_marker" ]; then',
        '  echo "this node is still booting: its bootstrap applies the newest configuration"',
        "  exit 0",
        "fi",
        f'"$agent" {Command.SYNC_CONFIG} || exit 1',
        f'"$agent" {Command.IDENTITIES} || exit 1',
        'echo "people and files applied"',
    ]


def push_document(description: str, step: str, timeout_seconds: int, commands: list[str]) -> str:
    """An SSM Command document (JSON, schema 2.2) of one shell step that a push runs: its
    parameter is the manifest's hash, so a new manifest is a new run of the association."""
    return json.dumps(
        {
            "schemaVersion": "2.2",
            "description": description,
            "parameters": {
                MANIFEST_HASH_PARAMETER: {
                    "type": "String",
                    "description": "sha256 of the config manifest (a change re-runs this)",
                    "allowedPattern": "^[0-9a-f]{64}$",
                }
            },
            "mainSteps": [
                {
                    "action": "aws:runShellScript",
                    "name": step,
                    "inputs": {
                        "timeoutSeconds": str(timeout_seconds),
                        "runCommand": commands,
                    },
                }
            ],
        },
        indent=2,
        sort_keys=True,
    )


def sync_nodes_document(plan: ClusterPlan) -> str:
    """The document every node runs on a push."""
    return push_document(
        f"slurmstack {plan.name}: pull this node's files, apply its people",
        "syncNode",
        SYNC_TIMEOUT_SECONDS,
        sync_nodes_commands(),
    )


def sync_nodes(
    plan: ClusterPlan,
    manifest_hash: str,
    *,
    parent: pulumi.Resource,
    depends_on: list[pulumi.Resource],
) -> ssm.Association:
    """The document and its association targeting every node of the cluster by its tag."""
    name = resource_name(plan.name, "sync-nodes")
    document = ssm.Document(
        name,
        name=name,
        document_type="Command",
        document_format="JSON",
        content=sync_nodes_document(plan),
        tags=tags(plan, Role.CONFIG, name),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return ssm.Association(
        name,
        association_name=name,
        name=document.name,
        targets=[{"key": f"tag:{CLUSTER_TAG}", "values": [plan.name]}],
        parameters={MANIFEST_HASH_PARAMETER: manifest_hash},
        # A node that fails shows in the association's status; the others go on.
        max_errors="100%",
        max_concurrency="50%",
        tags=tags(plan, Role.CONFIG, name),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on),
    )
