"""The config store and live updates.

Rendered files are uploaded in bundles (render.config_store): one object for the agent's
files, which every role shares, and one per role for the rest, each keyed by its content's
hash (``config/<sha256>``), so the number of objects grows with roles, not with files.
The manifest (contract.Manifest: each role's files by hash, and the bundles carrying them) is
stored the same way, and the CONFIG_MANIFEST
parameter holds only its key, so it stays small however many pools there are. A Command
document and an association targeting the head node apply it: the node agent's
``sync-config`` and ``accounting-db``, then ``scontrol reconfigure`` and ``accounting-apply``.
A second document and association (stack.sync_nodes), targeting every node of the cluster,
runs ``sync-config`` and ``identities``: people reach every node without a reboot.
The association carries the manifest hash as a parameter, so a configuration change updates
the association, which runs it again.

The association runs as soon as it exists, on a fresh deploy long before the head node has
its agent. Until the head's bootstrap marks itself done the document succeeds doing nothing
(the bootstrap syncs the newest manifest after that mark, before it starts slurmctld); if the
bootstrap failed first, the document fails and says at which step. After the mark it applies
the manifest and retries ``scontrol reconfigure`` (bounded) until slurmctld answers, so its
status shows real failures only.
"""

from __future__ import annotations

import hashlib
import shlex

import pulumi
import pulumi_aws.s3 as s3
import pulumi_aws.ssm as ssm

from slurmstack import render
from slurmstack.contract import (
    AGENT_PATH,
    BOOTSTRAP_DONE,
    BOOTSTRAP_FAILED,
    CLUSTER_TAG,
    ROLE_TAG,
    Command,
    DeployParameter,
    resource_name,
)
from slurmstack.plan import ClusterPlan
from slurmstack.stack import parameters
from slurmstack.stack.common import Role, tags
from slurmstack.stack.sync_nodes import MANIFEST_HASH_PARAMETER, push_document, sync_nodes

# Ubuntu's slurm-client; by absolute path, as Run Command's PATH is not the login PATH.
SCONTROL = "/usr/bin/scontrol"
# `scontrol reconfigure` until slurmctld answers: at most RECONFIGURE_ATTEMPTS tries,
# RECONFIGURE_DELAY_SECONDS apart (5 minutes), inside the step's timeout.
RECONFIGURE_ATTEMPTS = 30
RECONFIGURE_DELAY_SECONDS = 10
# Also within it: `accounting-db` (at most 120 s for MariaDB and slurmdbd to answer) and
# `accounting-apply` (sacctmgr, seconds).
APPLY_TIMEOUT_SECONDS = 600


def manifest_hash(manifest_json: str) -> str:
    return hashlib.sha256(manifest_json.encode()).hexdigest()


def object_logical_name(plan: ClusterPlan, key: str) -> str:
    """Stable, unique logical name of a store object: the cluster and the key's hash."""
    digest = key.rsplit("/", 1)[-1]
    return resource_name(plan.name, Role.CONFIG, digest[:16])


def apply_config_commands(
    *,
    # The agent by absolute path: Run Command's PATH is not the login PATH.
    agent: str = AGENT_PATH,
    scontrol: str = SCONTROL,
    done_marker: str = BOOTSTRAP_DONE,
    failed_marker: str = BOOTSTRAP_FAILED,
    attempts: int = RECONFIGURE_ATTEMPTS,
    delay: int = RECONFIGURE_DELAY_SECONDS,
) -> list[str]:
    """The document's shell script (POSIX sh), one line per entry. The keywords name what the
    head node has; tests run the same script against stand-ins by changing them (only the
    assignments at the top differ)."""
    param = "{{ " + MANIFEST_HASH_PARAMETER + " }}"
    q = shlex.quote
    return [
        "set -u",
        f"agent={q(agent)}",
        f"scontrol={q(scontrol)}",
        f"done_marker={q(done_marker)}",
        f"failed_marker={q(failed_marker)}",
        f"attempts={attempts}",
        f"delay={delay}",
        f"echo 'config manifest {param}'",
        'if [ ! -e "$done_marker" ]; then',
        '  if [ -e "$failed_marker" ]; then',
        '    echo "the bootstrap of the head node failed: $(cat "$failed_marker")" >&2',
        "    exit 1",
        "  fi",
        '  echo "the bootstrap of the head node is still running; it applies the newest'
        ' configuration itself before it starts slurmctld: nothing to do"',
        "  exit 0",
        "fi",
        f'if ! "$agent" {Command.SYNC_CONFIG}; then',
        f'  echo "slurmstack-node {Command.SYNC_CONFIG} failed" >&2',
        "  exit 1",
        "fi",
        # Accounting (a no-op when it is off): the database and slurmdbd before slurmctld
        # reads a slurm.conf that points at them, the accounts and QoS after.
        f'if ! "$agent" {Command.ACCOUNTING_DB}; then',
        f'  echo "slurmstack-node {Command.ACCOUNTING_DB} failed" >&2',
        "  exit 1",
        "fi",
        "n=1",
        'until "$scontrol" reconfigure; do',
        '  if [ "$n" -ge "$attempts" ]; then',
        '    echo "slurmctld did not answer scontrol reconfigure in $attempts attempts" >&2',
        "    exit 1",
        "  fi",
        '  echo "slurmctld does not answer yet (attempt $n of $attempts): again in ${delay} s"',
        "  n=$((n + 1))",
        '  sleep "$delay"',
        "done",
        # People first where jobs resolve them (slurmctld looks uids up here), then Slurm's
        # associations for them: a removed person is locked, then loses the association.
        f'if ! "$agent" {Command.IDENTITIES}; then',
        f'  echo "slurmstack-node {Command.IDENTITIES} failed" >&2',
        "  exit 1",
        "fi",
        f'if ! "$agent" {Command.ACCOUNTING_APPLY}; then',
        f'  echo "slurmstack-node {Command.ACCOUNTING_APPLY} failed" >&2',
        "  exit 1",
        "fi",
        'echo "configuration applied"',
    ]


def apply_config_document(plan: ClusterPlan) -> str:
    """The document that applies the manifest on the head node."""
    return push_document(
        f"slurmstack {plan.name}: pull the rendered config, reconfigure Slurm",
        "applyConfig",
        APPLY_TIMEOUT_SECONDS,
        apply_config_commands(),
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
                content_type="application/json",
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
        # Every node of the cluster: the same push reaches the people on every node.
        sync_nodes(plan, self.manifest_hash, parent=self, depends_on=[manifest_param])
        self.register_outputs({"manifest_hash": self.manifest_hash})
