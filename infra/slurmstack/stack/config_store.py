"""The config store and live updates.

Rendered files are uploaded as S3 objects keyed by content hash (``config/<sha256>``), so a
file shared by pools is stored once and the number of objects grows with distinct files.
The manifest (role -> node path -> key) goes to the CONFIG_MANIFEST parameter. A Command
document and an association targeting the head node apply it: the node agent's
``sync-config``, then ``scontrol reconfigure``. The association carries the manifest hash as
a parameter, so a configuration change updates the association, which runs it again.
"""

from __future__ import annotations

import hashlib
import json

import pulumi
import pulumi_aws.s3 as s3
import pulumi_aws.ssm as ssm

from slurmstack import render
from slurmstack.plan import ClusterPlan, DeployParameter
from slurmstack.stack import parameters
from slurmstack.stack.common import CLUSTER_TAG, NODE_AGENT, ROLE_TAG, Role, resource_name, tags

# SSM parameter tiers: Standard holds 4 KB, Advanced 8 KB. Intelligent-Tiering picks the
# cheaper one that fits, so a manifest that grows with pools keeps working up to 8 KB.
PARAMETER_TIER = "Intelligent-Tiering"
MANIFEST_MAX_BYTES = 8192
MANIFEST_HASH_PARAMETER = "ManifestHash"


def manifest_problems(plan: ClusterPlan) -> list[str]:
    """`path: message` lines when the config manifest cannot be stored (checked before any
    resource is registered, so a deploy never fails half-way on it)."""
    size = len(render.config_store(plan).manifest_json().encode())
    if size <= MANIFEST_MAX_BYTES:
        return []
    return [
        f"pools: the configuration manifest of {len(plan.pools)} pools is {size} bytes; the SSM "
        f"parameter {plan.parameter(DeployParameter.CONFIG_MANIFEST)} holds at most "
        f"{MANIFEST_MAX_BYTES} (use fewer pools until the manifest is split per role)"
    ]


def manifest_hash(manifest_json: str) -> str:
    return hashlib.sha256(manifest_json.encode()).hexdigest()


def object_logical_name(plan: ClusterPlan, key: str) -> str:
    """Stable, unique logical name of a store object: the cluster and the key's hash."""
    digest = key.rsplit("/", 1)[-1]
    return resource_name(plan.name, Role.CONFIG, digest[:16])


def apply_config_document(plan: ClusterPlan) -> str:
    """The SSM Command document (JSON, schema 2.2) that applies the manifest on the head node."""
    param = "{{ " + MANIFEST_HASH_PARAMETER + " }}"
    return json.dumps(
        {
            "schemaVersion": "2.2",
            "description": f"slurmstack {plan.name}: pull the rendered config, reconfigure Slurm",
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
                    "name": "applyConfig",
                    "inputs": {
                        "timeoutSeconds": "600",
                        "runCommand": [
                            "set -eu",
                            f"echo 'applying config manifest {param}'",
                            f"{NODE_AGENT} sync-config",
                            "scontrol reconfigure",
                        ],
                    },
                }
            ],
        },
        indent=2,
        sort_keys=True,
    )


class ConfigStore(pulumi.ComponentResource):
    manifest_hash: str

    def __init__(
        self,
        plan: ClusterPlan,
        *,
        bucket: pulumi.Input[str],
        head_instance_id: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        name = resource_name(plan.name, Role.CONFIG)
        super().__init__("slurmstack:stack:ConfigStore", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        store = render.config_store(plan)
        manifest = store.manifest_json()
        self.manifest_hash = manifest_hash(manifest)

        # S3 allows 10 tags per object: only slurmstack's own two, never the definition's.
        object_tags = {CLUSTER_TAG: plan.name, ROLE_TAG: Role.CONFIG.value}
        objects = [
            s3.BucketObjectv2(
                object_logical_name(plan, key),
                bucket=bucket,
                key=key,
                content=text,
                content_type="text/plain; charset=utf-8",
                tags=object_tags,
                opts=child,
            )
            for key, text in sorted(store.objects.items())
        ]
        # The manifest points at the objects: publish it only once they are uploaded.
        manifest_param = parameters.publish(
            plan,
            DeployParameter.CONFIG_MANIFEST,
            manifest,
            role=Role.CONFIG,
            parent=self,
            tier=PARAMETER_TIER,
            depends_on=list(objects),
        )
        doc_name = resource_name(plan.name, "apply-config")
        document = ssm.Document(
            doc_name,
            name=doc_name,
            document_type="Command",
            document_format="JSON",
            content=apply_config_document(plan),
            tags=tags(plan, Role.CONFIG, doc_name),
            opts=child,
        )
        ssm.Association(
            doc_name,
            association_name=doc_name,
            name=document.name,
            targets=[{"key": "InstanceIds", "values": [head_instance_id]}],
            parameters={MANIFEST_HASH_PARAMETER: self.manifest_hash},
            # A reconfigure is cheap; a failure shows in the association's status.
            max_errors="0",
            tags=tags(plan, Role.CONFIG, doc_name),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[manifest_param]),
        )
        self.register_outputs({"manifest_hash": self.manifest_hash})
