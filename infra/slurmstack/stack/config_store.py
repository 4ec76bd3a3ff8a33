"""The config store and live updates.

Rendered files are uploaded as S3 objects keyed by content hash (``config/<sha256>``), so a
file shared by pools is stored once and the number of objects grows with distinct files.
The manifest (role -> node path -> key) is stored the same way, and the CONFIG_MANIFEST
parameter holds only its key, so it stays small however many pools there are. A Command
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

MANIFEST_HASH_PARAMETER = "ManifestHash"


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
        # The manifest points at the objects: upload it, and publish its key, only once
        # they are uploaded.
        manifest_object = s3.BucketObjectv2(
            object_logical_name(plan, store.manifest_key),
            bucket=bucket,
            key=store.manifest_key,
            content=manifest,
            content_type="application/json",
            tags=object_tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(objects)),
        )
        manifest_param = parameters.publish(
            plan,
            DeployParameter.CONFIG_MANIFEST,
            store.manifest_key,
            role=Role.CONFIG,
            parent=self,
            depends_on=[manifest_object],
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
